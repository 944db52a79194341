//! `resource.Quantity` as kube-apiserver stores it: parsed (`ParseQuantity`) and written back in
//! its canonical form (`CanonicalizeBytes`), so `cpu: 0.5` is stored as `500m`, `memory: 1024Mi` as
//! `1Gi` and `1000` as `1k`, exactly as kube does, and a malformed quantity is refused with kube's
//! message.
//!
//! kube keeps a quantity either as an int64 mantissa with a decimal scale (the fast path, which
//! also reuses the string as written when it is already canonical) or as an arbitrary-precision
//! decimal rounded up to nano units and capped at 2^63-1 (the slow path). Both are reproduced here
//! with a `u128` magnitude, which holds every value either path can produce.

/// Why a string is not a quantity: kube's error texts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Format,
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// The largest value kube keeps (`maxAllowed`, 2^63-1), in nano units.
const MAX_NANO: u128 = (i64::MAX as u128) * 1_000_000_000;

/// The canonical form kube stores for the quantity `s` (surrounding whitespace ignored, as
/// `Quantity.UnmarshalJSON` trims it).
pub fn canonical(s: &str) -> Result<String, QuantityError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    if s == "0" {
        return Ok("0".into());
    }
    let p = parse(s)?;
    let (base, exponent, format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
    if let Some(fast) = fast_path(s, &p, exponent, format) {
        return Ok(fast);
    }
    Ok(slow_path(&p, base, exponent, format))
}

/// `parseQuantityString`: sign, numerator (leading zeros stripped), denominator, suffix.
struct Parsed<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn parse(s: &str) -> Result<Parsed<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parsed {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < end && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    Ok(Parsed {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e, Format::DecimalSI));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e, Format::BinarySI));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    if rest.is_empty() {
        return None;
    }
    // An exponent that does not fit kube's int32 scale (negated later) is refused.
    let e: i64 = rest.parse().ok()?;
    (e.abs() <= i64::from(i32::MAX)).then_some((10, e, Format::DecimalExponent))
}

/// kube's int64 path; `None` when the value needs the arbitrary-precision one.
fn fast_path(s: &str, p: &Parsed<'_>, exponent: i64, format: Format) -> Option<String> {
    let digits = p.num.len() + p.denom.len();
    let (mut scale, mantissa, precision) = match format {
        Format::DecimalExponent | Format::DecimalSI => (exponent, 1i64, 18 - digits as i64),
        Format::BinarySI => {
            if exponent >= 0 && p.denom.is_empty() {
                let precision = 15 - p.num.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
                (0, 1i64 << exponent, precision)
            } else {
                (0, 1, -1)
            }
        }
    };
    if precision < 0 {
        return None;
    }
    scale -= p.denom.len() as i64;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{}{}", p.num, p.denom);
    let value: i64 = shifted.parse().ok()?;
    let result = value.checked_mul(mantissa)?;
    // The string as written, when kube deems it canonical already.
    let reuse = match format {
        Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    if reuse {
        return Some(s.to_owned());
    }
    Some(render(
        !p.positive,
        u128::from(result.unsigned_abs()),
        scale,
        format,
    ))
}

/// kube's `inf.Dec` path: the exact value rounded up (away from zero) to nano units, capped at
/// 2^63-1.
fn slow_path(p: &Parsed<'_>, base: u32, exponent: i64, mut format: Format) -> String {
    let nano = nano_of(p, base, exponent);
    if format == Format::BinarySI && nano > 0 && nano < 1_000_000_000 {
        format = Format::DecimalSI;
    }
    render(!p.positive, nano, -9, format)
}

/// The magnitude of a parsed quantity in nano units (rounded up, at most [`MAX_NANO`]).
fn nano_of(p: &Parsed<'_>, base: u32, exponent: i64) -> u128 {
    let all = format!("{}{}", p.num, p.denom);
    let digits = all.trim_start_matches('0');
    // value = digits * 10^e10 * 2^e2, in nano units.
    let mut e10 = 9 - p.denom.len() as i64 + if base == 10 { exponent } else { 0 };
    let e2 = if base == 2 { exponent as u32 } else { 0 };
    if digits.is_empty() {
        0
    } else {
        nano_units(digits, &mut e10, e2)
    }
}

/// `ceil(digits * 10^e10 * 2^e2)`, at most [`MAX_NANO`].
fn nano_units(digits: &str, e10: &mut i64, e2: u32) -> u128 {
    if *e10 >= 0 {
        if digits.len() as i64 + *e10 > 29 {
            return MAX_NANO;
        }
        let v: u128 = digits.parse().unwrap_or(u128::MAX);
        return pow10(*e10 as u32)
            .and_then(|p| v.checked_mul(p))
            .and_then(|v| v.checked_mul(1u128.checked_shl(e2)?))
            .map_or(MAX_NANO, |v| v.min(MAX_NANO));
    }
    // Keep at most 38 significant digits; what is dropped only makes the result round up.
    let mut m = -*e10;
    let mut sticky = false;
    let mut digits = digits;
    if digits.len() > 38 {
        let drop = digits.len() - 38;
        if drop as i64 > m {
            return MAX_NANO; // more than 38 digits before the point
        }
        sticky = digits[38..].bytes().any(|d| d != b'0');
        digits = &digits[..38];
        m -= drop as i64;
    }
    let mut x: u128 = digits.parse().unwrap_or(u128::MAX);
    // Binary exponents are at most 60 (`Ei`): the shift cannot overflow.
    let x = loop {
        if let Some(v) = x.checked_mul(1u128 << e2.min(64)) {
            break v;
        }
        if m == 0 {
            return MAX_NANO;
        }
        sticky |= !x.is_multiple_of(10);
        x /= 10;
        m -= 1;
    };
    let (q, r) = match pow10(m as u32) {
        Some(d) if m <= 38 => (x / d, x % d),
        _ => (0, x),
    };
    let up = u128::from(r != 0 || sticky);
    (q + up).min(MAX_NANO)
}

fn pow10(e: u32) -> Option<u128> {
    10u128.checked_pow(e)
}

/// `CanonicalizeBytes` of the value `magnitude * 10^exp10` (negated if `negative`).
fn render(negative: bool, magnitude: u128, exp10: i64, format: Format) -> String {
    if magnitude == 0 {
        return "0".into();
    }
    let sign = if negative { "-" } else { "" };
    if format == Format::BinarySI {
        // Below 1024, or not a whole number: shown as DecimalSI (no rounding).
        let whole = if exp10 >= 0 {
            pow10(exp10 as u32).and_then(|p| magnitude.checked_mul(p))
        } else {
            pow10((-exp10) as u32)
                .filter(|p| magnitude.is_multiple_of(*p))
                .map(|p| magnitude / p)
        };
        if let Some(mut v) = whole.filter(|v| *v >= 1024) {
            let mut times = 0;
            while v.is_multiple_of(1024) {
                v /= 1024;
                times += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .get(times)
                .copied()
                .unwrap_or("");
            return format!("{sign}{v}{suffix}");
        }
        return render(negative, magnitude, exp10, Format::DecimalSI);
    }
    let (mut m, mut e) = (magnitude, exp10);
    while m.is_multiple_of(10) {
        m /= 10;
        e += 1;
    }
    match e.rem_euclid(3) {
        1 => {
            m *= 10;
            e -= 1;
        }
        2 => {
            m *= 100;
            e -= 2;
        }
        _ => {}
    }
    let suffix = match format {
        Format::DecimalExponent if e == 0 => String::new(),
        Format::DecimalExponent => format!("e{e}"),
        _ => match e {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            // kube ignores the failed suffix lookup and prints the bare mantissa.
            _ => "",
        }
        .to_owned(),
    };
    format!("{sign}{m}{suffix}")
}

/// The value of the quantity `s` in nano units (rounded up, capped, as kube keeps it), and
/// whether it is written with a binary suffix (`Ki`, `Mi`, ...): what quota arithmetic needs.
pub fn nano_value(s: &str) -> Result<(i128, bool), QuantityError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let p = parse(s)?;
    let (base, exponent, format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
    let nano = nano_of(&p, base, exponent);
    let signed = i128::try_from(nano).unwrap_or(i128::MAX);
    Ok((
        if p.positive { signed } else { -signed },
        format == Format::BinarySI,
    ))
}

/// A quantity of `nano` nano units in kube's canonical form, binary (`Mi`) or decimal (`m`).
pub fn from_nano(nano: i128, binary: bool) -> String {
    let format = if binary {
        Format::BinarySI
    } else {
        Format::DecimalSI
    };
    render(nano < 0, nano.unsigned_abs(), -9, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_nano_units_for_quota_sums() {
        assert_eq!(nano_value("500m"), Ok((500_000_000, false)));
        assert_eq!(nano_value("1Gi"), Ok((1_073_741_824_000_000_000, true)));
        assert_eq!(nano_value("2"), Ok((2_000_000_000, false)));
        assert_eq!(from_nano(1_500_000_000, false), "1500m");
        assert_eq!(from_nano(2_000_000_000, false), "2");
        assert_eq!(from_nano(0, false), "0");
        assert_eq!(from_nano(3 * 1_073_741_824_000_000_000, true), "3Gi");
        assert_eq!(from_nano(1_000_000_000, true), "1");
    }

    #[track_caller]
    fn c(input: &str, want: &str) {
        assert_eq!(canonical(input).as_deref(), Ok(want), "{input}");
    }

    #[test]
    fn canonical_forms_as_kube_prints_them() {
        // Reused as written (already canonical).
        for s in [
            "1", "100m", "1Gi", "512Ki", "12E", "1e3", "5n", "8k", "-1Gi", "+1",
        ] {
            c(s, s);
        }
        c("0.5", "500m");
        c("0.1", "100m");
        c("1.5", "1500m");
        c("1000", "1k");
        c("1500", "1500");
        c("1000m", "1");
        c("1024Mi", "1Gi");
        c("1536Mi", "1536Mi");
        c("8Mi", "8Mi");
        c("0.5Mi", "512Ki");
        c("0.5Ki", "512");
        c("1.5Gi", "1536Mi");
        c("100.035Ki", "102435840m");
        c("50k", "50k");
        c("10.035M", "10.035M"); // canonical by kube's test (scale a multiple of 3), kept as written
        c("1.2e3", "1200");
        c("1.3E+6", "1300e3");
        c("0.5e-2", "5e-3");
        c("0", "0");
        c("0Gi", "0");
        c("000", "0");
        c(".", "0");
        c("0.0", "0");
        c("-0.5", "-500m");
        c("1.", "1."); // kube keeps a string its int64 path deems canonical
        c("1.G", "1.G");
        c(" 2 ", "2");
    }

    #[test]
    fn rounding_up_to_nano_and_the_cap() {
        c("3.001n", "4n");
        c("1.1E-9", "2e-9");
        c("0.0000000001", "1n");
        c("0.00000012345", "124n");
        c("0.000000000001Ki", "2n");
        c("9Ei", "9223372036854775807");
        c("9223372036854775807Ki", "9223372036854775807");
        c(
            "99999999999999999999999999999999999999999999",
            "9223372036854775807",
        );
        // kube's int64 path keeps huge decimal exponents uncapped.
        c("1e4000", "10e3999");
    }

    #[test]
    fn malformed_quantities_get_kube_errors() {
        for s in ["1.1.M", "1+1.0M", "aoeu", "", "1 0"] {
            assert_eq!(canonical(s), Err(QuantityError::Format), "{s}");
        }
        for s in [
            "0.1mi",
            "0.1am",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            "1e4294967297",
            "1E-2147483648",
        ] {
            assert!(canonical(s).is_err(), "{s}");
        }
        assert_eq!(canonical("1i"), Err(QuantityError::Suffix));
    }
}
