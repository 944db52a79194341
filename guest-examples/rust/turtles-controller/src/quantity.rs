//! Kubernetes resource quantities (`1Gi`, `500M`, `100m`, `1.5e3`), compared as numbers.

/// A quantity's value in milli-units (`"1Gi"` is 1,073,741,824,000; `"100m"` is 100), or `None`
/// when it is not a quantity. Fractions below a milli-unit round up, as kube's `MilliValue` does.
pub fn milli_value(text: &str) -> Option<i128> {
    let text = text.trim();
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let digits_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    // The mantissa as an integer and its decimal scale.
    let mut mantissa: i128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c as u8 - b'0'))?;
    }
    let mut scale10: i32 = -(fraction.len() as i32);
    let mut multiplier: i128 = 1;
    match suffix {
        "" => {}
        "n" => scale10 = scale10.checked_sub(9)?,
        "u" => scale10 = scale10.checked_sub(6)?,
        "m" => scale10 = scale10.checked_sub(3)?,
        "k" => scale10 += 3,
        "M" => scale10 += 6,
        "G" => scale10 += 9,
        "T" => scale10 += 12,
        "P" => scale10 += 15,
        "E" => scale10 += 18,
        "Ki" => multiplier = 1 << 10,
        "Mi" => multiplier = 1 << 20,
        "Gi" => multiplier = 1 << 30,
        "Ti" => multiplier = 1 << 40,
        "Pi" => multiplier = 1 << 50,
        "Ei" => multiplier = 1 << 60,
        s if s.starts_with(['e', 'E']) => {
            scale10 = scale10.checked_add(s[1..].parse::<i32>().ok()?)?
        }
        _ => return None,
    }
    // milli-units: one more factor of 1000.
    scale10 = scale10.checked_add(3)?;
    let mut value = mantissa.checked_mul(multiplier)?;
    if scale10 >= 0 {
        value = value.checked_mul(10i128.checked_pow(scale10 as u32)?)?;
    } else {
        let div = 10i128.checked_pow((-scale10) as u32)?;
        value = (value + div - 1) / div;
    }
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::milli_value;

    #[test]
    fn quantities_parse_as_kube_reads_them() {
        assert_eq!(milli_value("1Gi"), Some(1_073_741_824_000));
        assert_eq!(milli_value("1G"), Some(1_000_000_000_000));
        assert_eq!(milli_value("500Mi"), Some(524_288_000_000));
        assert_eq!(milli_value("100m"), Some(100));
        assert_eq!(milli_value("1.5"), Some(1500));
        assert_eq!(milli_value("2e3"), Some(2_000_000));
        assert_eq!(milli_value("1n"), Some(1));
        assert_eq!(milli_value("-1"), Some(-1000));
        assert!(milli_value("1Gb").is_none());
        assert!(milli_value("").is_none());
        assert!(milli_value("Gi").is_none());
        assert!(milli_value("1.2.3").is_none());
        assert!(milli_value("1.5e-2147483648").is_none());
        assert!(milli_value("1e999").is_none());
        assert!(milli_value("1Gi") > milli_value("1G"));
    }
}
