//! A strict reader of DER elements (definite lengths in their shortest form, as Go's
//! `encoding/asn1` reads them), for the X.509 names and keys turtles copies or trusts:
//! x509-parser stops at the first entry of a Name it cannot read and ignores the rest, and its
//! `raw` slice then ends under a header that still claims the whole length.

/// One DER element at the start of `b` (definite length): the element and what follows it.
pub fn element(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    if tag & 0x1f == 0x1f {
        return None; // a high tag number: none in these structures
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(n)?;
        let len = bytes.iter().fold(0usize, |a, b| a << 8 | usize::from(*b));
        // DER: the shortest form (no leading zero byte; the long form only from 128 on).
        if bytes[0] == 0 || len < 0x80 {
            return None;
        }
        (len, rest)
    };
    let end = (b.len() - rest.len()).checked_add(len)?;
    (end <= b.len()).then(|| b.split_at(end))
}

/// What an element holds (after its header).
pub fn contents(el: &[u8]) -> &[u8] {
    let long = el.get(1).is_some_and(|l| l & 0x80 != 0);
    let header = if long {
        2 + usize::from(el[1] & 0x7f)
    } else {
        2
    };
    el.get(header..).unwrap_or_default()
}

/// The entries of a Name's DER read by their own headers (how many attributes each holds), if
/// `raw` is one whole `SEQUENCE` and every attribute is exactly a type and a value.
pub fn entries(raw: &[u8]) -> Option<Vec<usize>> {
    let (name, rest) = element(raw)?;
    if !rest.is_empty() || name[0] != 0x30 {
        return None;
    }
    let mut counts = Vec::new();
    let mut rest = contents(name);
    while !rest.is_empty() {
        let (rdn, after) = element(rest)?;
        let mut n = 0;
        let mut attrs = contents(rdn);
        while !attrs.is_empty() {
            let (attr, a) = element(attrs)?;
            let (_, value) = element(contents(attr))?;
            let (_, tail) = element(value)?;
            if !tail.is_empty() {
                return None;
            }
            attrs = a;
            n += 1;
        }
        counts.push(n);
        rest = after;
    }
    Some(counts)
}

/// How many entries (relative distinguished names) a Name's DER holds.
pub fn rdn_count(raw: &[u8]) -> Option<usize> {
    entries(raw).map(|e| e.len())
}

/// Whether x509-parser read every attribute of every entry of `name` (and the Name is DER).
pub fn whole_name(name: &x509_parser::x509::X509Name<'_>) -> bool {
    let read: Vec<usize> = name.iter().map(|rdn| rdn.iter().count()).collect();
    entries(name.as_raw()) == Some(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_form_length_from_128_on_is_read_and_skipped() {
        // (Lengths refused are in `signer`'s tests.)
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([0u8; 128]);
        assert_eq!(
            element(&long).map(|(e, r)| (e.len(), r.len())),
            Some((131, 0))
        );
        assert_eq!(contents(&long).len(), 128);
    }
}
