//! kube's lenient IP and CIDR parsing (`k8s.io/utils/net`'s `ParseIPSloppy` and
//! `ParseCIDRSloppy`, Go 1.16's `net.ParseIP`/`ParseCIDR`, which take IPv4 octets with leading
//! zeros): what kube 1.34 checks its "legacy" IP and CIDR fields with while the
//! `StrictIPCIDRValidation` gate is off (its default).

/// Go's `dtoi`: the leading decimal digits of `s` as (value, digits), `None` when there is no
/// digit or the value reaches 0xFFFFFF.
pub(crate) fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut used = 0;
    for &b in s.iter().take_while(|b| b.is_ascii_digit()) {
        n = n * 10 + u32::from(b - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
        used += 1;
    }
    (used > 0).then_some((n, used))
}

/// Go's `xtoi`: as `dtoi`, in hexadecimal.
pub(crate) fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut used = 0;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        n = n * 16 + u32::from(d);
        if n >= 0xFF_FFFF {
            return None;
        }
        used += 1;
    }
    (used > 0).then_some((n, used))
}

/// The forked `parseIPv4`: four dot-separated decimal octets, leading zeros allowed.
pub(crate) fn parse_ipv4_sloppy(s: &[u8]) -> Option<[u8; 4]> {
    let mut rest = s;
    let mut out = [0u8; 4];
    for (i, slot) in out.iter_mut().enumerate() {
        if i > 0 {
            if rest.first() != Some(&b'.') {
                return None;
            }
            rest = rest.get(1..)?;
        }
        let (n, used) = dtoi(rest)?;
        *slot = u8::try_from(n).ok()?;
        rest = rest.get(used..)?;
    }
    rest.is_empty().then_some(out)
}

/// The forked `parseIPv6` (no zone; a trailing dotted IPv4 part parsed as `parse_ipv4_sloppy`).
pub(crate) fn parse_ipv6_sloppy(s: &[u8]) -> Option<[u8; 16]> {
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    let mut s = s;
    if s.starts_with(b"::") {
        ellipsis = Some(0);
        s = s.get(2..)?;
        if s.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let (n, used) = xtoi(s)?;
        if n > 0xFFFF {
            return None;
        }
        if s.get(used) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return None;
            }
            if i + 4 > 16 {
                return None;
            }
            let v4 = parse_ipv4_sloppy(s)?;
            ip.get_mut(i..i + 4)?.copy_from_slice(&v4);
            s = &[];
            i += 4;
            break;
        }
        *ip.get_mut(i)? = (n >> 8) as u8;
        *ip.get_mut(i + 1)? = (n & 0xFF) as u8;
        i += 2;
        s = s.get(used..)?;
        if s.is_empty() {
            break;
        }
        if s.first() != Some(&b':') || s.len() == 1 {
            return None;
        }
        s = s.get(1..)?;
        if s.first() == Some(&b':') {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = s.get(1..)?;
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    if i < 16 {
        let e = ellipsis?;
        let n = 16 - i;
        if e > i {
            return None;
        }
        ip.copy_within(e..i, e + n);
        for b in ip.iter_mut().skip(e).take(n) {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return None;
    }
    Some(ip)
}

/// `netutils.ParseIPSloppy(s) != nil`.
pub(crate) fn is_ip_sloppy(s: &str) -> bool {
    for b in s.bytes() {
        match b {
            b'.' => return parse_ipv4_sloppy(s.as_bytes()).is_some(),
            b':' => return parse_ipv6_sloppy(s.as_bytes()).is_some(),
            _ => {}
        }
    }
    false
}

/// Go's `IP.To4`: the 4-byte form of an IPv4 (or IPv4-mapped IPv6) address.
pub(crate) fn to4(ip: &[u8]) -> Option<&[u8]> {
    match ip.len() {
        4 => Some(ip),
        16 if ip.iter().take(10).all(|&b| b == 0)
            && ip.get(10) == Some(&0xFF)
            && ip.get(11) == Some(&0xFF) =>
        {
            ip.get(12..)
        }
        _ => None,
    }
}

/// The first `ones` bits of `len` bytes set (Go's `CIDRMask`).
pub(crate) fn mask_bytes(ones: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let bits = ones.saturating_sub(i * 8).min(8);
            if bits == 0 {
                0
            } else {
                (0xFFu16 << (8 - bits)) as u8
            }
        })
        .collect()
}

/// A Go `*net.IPNet` as `ParseCIDRSloppy` returns it: the masked network address (4 bytes for
/// an IPv4 CIDR, 16 for an IPv6 one, IPv4-mapped included) and the prefix length.
pub(crate) struct GoNet {
    pub(crate) ip: Vec<u8>,
    pub(crate) ones: usize,
}

impl GoNet {
    /// Go's `IPNet.Contains` (with its `networkNumberAndMask`).
    pub(crate) fn contains(&self, ip: &[u8]) -> bool {
        let mask = mask_bytes(self.ones, self.ip.len());
        let (nn, m): (&[u8], &[u8]) = match to4(&self.ip) {
            Some(v4) if mask.len() == 16 => (v4, mask.get(12..).unwrap_or_default()),
            Some(v4) => (v4, mask.as_slice()),
            None => (self.ip.as_slice(), mask.as_slice()),
        };
        let target = to4(ip).unwrap_or(ip);
        target.len() == nn.len()
            && m.len() == nn.len()
            && nn
                .iter()
                .zip(m)
                .zip(target)
                .all(|((&a, &k), &b)| a & k == b & k)
    }
}

/// `netutils.ParseCIDRSloppy`.
pub(crate) fn parse_cidr_sloppy(s: &str) -> Option<GoNet> {
    let (addr, bits) = s.split_once('/')?;
    let ip: Vec<u8> = match parse_ipv4_sloppy(addr.as_bytes()) {
        Some(v4) => v4.to_vec(),
        None => parse_ipv6_sloppy(addr.as_bytes())?.to_vec(),
    };
    let (ones, used) = dtoi(bits.as_bytes())?;
    let ones = ones as usize;
    if used != bits.len() || ones > ip.len() * 8 {
        return None;
    }
    let mask = mask_bytes(ones, ip.len());
    let ip = ip.iter().zip(&mask).map(|(a, m)| a & m).collect();
    Some(GoNet { ip, ones })
}

/// `netutils.ParseIPSloppy`, as Go's 16-byte form (an IPv4 address as `::ffff:a.b.c.d`).
pub(crate) fn parse_ip16(s: &str) -> Option<[u8; 16]> {
    for b in s.bytes() {
        match b {
            b'.' => {
                let v4 = parse_ipv4_sloppy(s.as_bytes())?;
                let mut ip = [0u8; 16];
                ip[10] = 0xFF;
                ip[11] = 0xFF;
                ip[12..].copy_from_slice(&v4);
                return Some(ip);
            }
            b':' => return parse_ipv6_sloppy(s.as_bytes()),
            _ => {}
        }
    }
    None
}

/// Go's `IP.To4` of a 16-byte IP: the IPv4 address of an IPv4 (IPv4-mapped) one.
pub(crate) fn to4_16(ip: &[u8; 16]) -> Option<[u8; 4]> {
    let mapped = ip.iter().take(10).all(|&b| b == 0) && ip[10] == 0xFF && ip[11] == 0xFF;
    mapped.then(|| [ip[12], ip[13], ip[14], ip[15]])
}

/// apimachinery's strict `IsValidIP` (what IPAddress names are checked with): the messages, in
/// kube's order (none when valid).
pub(crate) fn ip_strict(s: &str) -> Vec<String> {
    if parse_ip16(s).is_none() {
        return vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()];
    }
    let Ok(ip) = s.parse::<std::net::IpAddr>() else {
        return vec!["must not have leading 0s".into()];
    };
    if let std::net::IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return vec!["must not be an IPv4-mapped IPv6 address".into()];
        }
    }
    let canonical = ip.to_string();
    if canonical != s {
        return vec![format!("must be in canonical form ({canonical:?})")];
    }
    Vec::new()
}

/// apimachinery's strict `IsValidCIDR` (ServiceCIDRs): the messages, in kube's order.
pub(crate) fn cidr_strict(s: &str) -> Vec<String> {
    if parse_cidr_sloppy(s).is_none() {
        return vec!["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".into()];
    }
    let (addr, bits) = s.split_once('/').unwrap_or((s, ""));
    let ip = addr.parse::<std::net::IpAddr>().ok();
    let ones = (!bits.is_empty() && (bits == "0" || !bits.starts_with('0')))
        .then(|| bits.parse::<u32>().ok())
        .flatten();
    let (Some(ip), Some(ones)) = (ip, ones) else {
        return vec!["must not have leading 0s in IP or prefix length".into()];
    };
    let bytes: Vec<u8> = match ip {
        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
        std::net::IpAddr::V6(v6) => {
            if v6.to_ipv4_mapped().is_some() {
                return vec!["must not have an IPv4-mapped IPv6 address".into()];
            }
            v6.octets().to_vec()
        }
    };
    let mask = mask_bytes(ones as usize, bytes.len());
    if bytes.iter().zip(&mask).any(|(b, m)| b & !m != 0) {
        return vec!["must not have bits set beyond the prefix length".into()];
    }
    let canonical = format!("{ip}/{ones}");
    if canonical != s {
        return vec![format!("must be in canonical form ({canonical:?})")];
    }
    Vec::new()
}

/// The family of a CIDR (4 or 6) as kube's `IPFamilyOfCIDRString` reads it (the sloppy
/// parser; an IPv4-mapped address is IPv4), if it parses.
pub(crate) fn cidr_family(s: &str) -> Option<u8> {
    let net = parse_cidr_sloppy(s)?;
    let v4 = net.ip.len() == 4 || to4(&net.ip).is_some();
    Some(if v4 { 4 } else { 6 })
}

/// `netutils.IsIPv6String`.
pub(crate) fn is_ipv6_string(s: &str) -> bool {
    parse_ip16(s).is_some_and(|ip| to4_16(&ip).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_ips_and_cidrs_as_apimachinery_checks_them() {
        assert!(ip_strict("10.0.0.1").is_empty());
        assert!(ip_strict("2001:db8::1").is_empty());
        assert_eq!(ip_strict("010.0.0.1"), ["must not have leading 0s"]);
        assert_eq!(
            ip_strict("::ffff:1.2.3.4"),
            ["must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            ip_strict("2001:DB8::1"),
            ["must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            ip_strict("x"),
            ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
        assert!(cidr_strict("10.96.0.0/12").is_empty());
        assert!(cidr_strict("fd00::/108").is_empty());
        assert_eq!(
            cidr_strict("10.96.0.1/12"),
            ["must not have bits set beyond the prefix length"]
        );
        assert_eq!(
            cidr_strict("10.96.0.0/012"),
            ["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            cidr_strict("FD00::/108"),
            ["must be in canonical form (\"fd00::/108\")"]
        );
        assert_eq!(
            cidr_strict("10.96.0.0"),
            ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert_eq!(cidr_family("fd00::/108"), Some(6));
        assert_eq!(cidr_family("10.0.0.0/8"), Some(4));
        assert_eq!(cidr_family("10.0.0.0/33"), None);
    }
}
