//! robfig/cron v3.0.1's `ParseStandard` (the parser kube's CronJob validation runs on
//! `spec.schedule`), reduced to what validation needs: whether a schedule parses, and the exact
//! error text when it does not. Also the pieces of Go's standard library its messages come from
//! (`strconv.Atoi`, `time.ParseDuration`, `time.LoadLocation`, `strconv.Quote`).

use std::path::Path;

/// The zone database turtles consults for `time.LoadLocation`.
const ZONEINFO: &str = "/usr/share/zoneinfo";

/// `cron.ParseStandard(spec)`: `Ok` when the schedule parses, else the parser's error text.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_owned());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        // v3.0.1 panics (slices to -1) when no space follows the zone; here the zone runs to the
        // end of the spec, and what is left (nothing) has the wrong number of fields.
        let end = spec.find(' ').unwrap_or(spec.len());
        let name = spec.get(eq + 1..end).unwrap_or("");
        if let Err(e) = load_location(name) {
            return Err(format!("provided bad location {name}: {e}"));
        }
        spec = spec.get(end..).unwrap_or("").trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [MINUTES, HOURS, DOM, MONTHS, DOW];
    for (f, b) in fields.iter().zip(bounds.iter()) {
        get_field(f, b)?;
    }
    Ok(())
}

/// A field's range and names (`bounds`).
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// `getField`: a comma-separated list of ranges (empty items skipped, as `FieldsFunc` does).
fn get_field(field: &str, b: &Bounds) -> Result<(), String> {
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        get_range(expr, b)?;
    }
    Ok(())
}

/// `getRange`: `*`, `?`, `N`, `N-M`, each optionally `/step`.
fn get_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let start: u64;
    let mut end: u64;
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = b.min;
        end = b.max;
    } else {
        start = parse_int_or_name(low_and_high[0], b.names)?;
        match low_and_high.len() {
            1 => end = start,
            2 => end = parse_int_or_name(low_and_high[1], b.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// `parseIntOrName`: a (case-insensitive) name of the field, else a number.
fn parse_int_or_name(expr: &str, names: &[(&str, u64)]) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some((_, n)) = names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    must_parse_int(expr)
}

/// `mustParseInt`: `strconv.Atoi`, not negative.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    match atoi(expr) {
        Err(e) => Err(format!(
            "failed to parse int from {expr}: {}",
            e.message("Atoi", expr)
        )),
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

/// `parseDescriptor`: `@yearly`, `@every 1h30m`, ...
fn parse_descriptor(descriptor: &str) -> Result<(), String> {
    match descriptor {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            return Ok(())
        }
        _ => {}
    }
    if let Some(d) = descriptor.strip_prefix("@every ") {
        return parse_duration(d)
            .map(|_| ())
            .map_err(|e| format!("failed to parse duration {descriptor}: {e}"));
    }
    Err(format!("unrecognized descriptor: {descriptor}"))
}

// ---- Go's standard library ----

/// Why Go's `strconv.Atoi` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtoiError {
    Syntax,
    /// Out of range; Go still returns the value clamped to the int64 range.
    Range(i64),
}

impl AtoiError {
    /// `strconv.<func>: parsing "<s>": invalid syntax` (or `value out of range`).
    pub fn message(&self, func: &str, s: &str) -> String {
        let what = match self {
            AtoiError::Syntax => "invalid syntax",
            AtoiError::Range(_) => "value out of range",
        };
        format!("strconv.{func}: parsing {}: {what}", go_quote(s))
    }
}

/// Go's `strconv.Atoi` (64-bit `int`): an optional sign, then decimal digits.
pub fn atoi(s: &str) -> Result<i64, AtoiError> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(AtoiError::Syntax);
    }
    let mut n: u64 = 0;
    for c in digits.bytes() {
        if !c.is_ascii_digit() {
            return Err(AtoiError::Syntax);
        }
        match n
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(c - b'0')))
        {
            Some(x) => n = x,
            None => return Err(AtoiError::Range(if neg { i64::MIN } else { i64::MAX })),
        }
    }
    if neg {
        if n > 1u64 << 63 {
            return Err(AtoiError::Range(i64::MIN));
        }
        Ok((n as i128).wrapping_neg() as i64)
    } else if n > i64::MAX as u64 {
        Err(AtoiError::Range(i64::MAX))
    } else {
        Ok(n as i64)
    }
}

/// Go's `strconv.Quote` (`%q`).
pub use crate::auth::rbac::go_quote;

// The `time` package's own quoting of durations and zone names (`builtin::time::quote`).
use crate::builtin::time::quote as time_quote;

/// Go's `time.ParseDuration`: the duration in nanoseconds, or Go's error text.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", time_quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.as_bytes().first() {
        if *c == b'-' || *c == b'+' {
            neg = *c == b'-';
            s = &s[1..];
        }
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut d: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // leadingInt
        let mut i = 0;
        let mut v: u64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            if v > LIMIT / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(b[i] - b'0');
            if v > LIMIT {
                return Err(invalid());
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        // leadingFraction
        let mut f: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if s.as_bytes().first() == Some(&b'.') {
            s = &s[1..];
            let b = s.as_bytes();
            let mut j = 0;
            let mut overflow = false;
            while j < b.len() && b[j].is_ascii_digit() {
                if !overflow {
                    if f > (LIMIT - 1) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + u64::from(b[j] - b'0');
                        if y > LIMIT {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                j += 1;
            }
            post = j > 0;
            s = &s[j..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        // The unit.
        let b = s.as_bytes();
        let mut k = 0;
        while k < b.len() && !(b[k] == b'.' || b[k].is_ascii_digit()) {
            k += 1;
        }
        if k == 0 {
            return Err(format!(
                "time: missing unit in duration {}",
                time_quote(orig)
            ));
        }
        let u = &s[..k];
        s = &s[k..];
        let unit: u64 = match u {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3600 * 1_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    time_quote(u),
                    time_quote(orig)
                ))
            }
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        d = d.checked_add(v).ok_or_else(invalid)?;
        if d > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i128).wrapping_neg() as i64);
    }
    if d > LIMIT - 1 {
        return Err(invalid());
    }
    Ok(d as i64)
}

/// Go's `time.LoadLocation`, against the host's zone database: `""`, `UTC` and `Local` always
/// load; otherwise the name must be a zone file under `/usr/share/zoneinfo` (any well-formed
/// name loads when the host has no zone database).
pub fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".to_owned());
    }
    let unknown = || format!("unknown time zone {name}");
    let dir = Path::new(ZONEINFO);
    if !dir.is_dir() {
        return Ok(());
    }
    if name.contains('\0') {
        return Err(unknown());
    }
    let path = dir.join(name);
    if !path.is_file() {
        return Err(unknown());
    }
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            use std::io::Read;
            let mut magic = [0u8; 4];
            match f.read_exact(&mut magic) {
                Ok(()) if &magic == b"TZif" => Ok(()),
                _ => Err("malformed time zone information".to_owned()),
            }
        }
        Err(_) => Err(unknown()),
    }
}

/// Whether the host has a zone database (tests of zone names depend on it).
#[cfg(test)]
pub(crate) fn have_zoneinfo() -> bool {
    Path::new(ZONEINFO).join("UTC").is_file() || Path::new(ZONEINFO).join("Etc/UTC").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        parse_standard(s).err().unwrap_or_default()
    }

    #[test]
    fn standard_specs_parse() {
        for ok in [
            "* * * * *",
            "*/5 * * * *",
            "0 0 1 1 *",
            "0 0 * * ?",
            "0-59/15 0-23 1-31 1-12 0-6",
            "0 0 * JAN-dec SUN-sat",
            "5 4 * * sun",
            "1,2,,3 * * * *",
            "+5 * * * *",
            "@hourly",
            "@yearly",
            "@annually",
            "@midnight",
            "@every 1h30m",
            "@every 1.5s",
            "@every 0",
            "TZ=UTC 0 0 * * *",
            "CRON_TZ=UTC @daily",
            "30 2/3 * * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn errors_are_robfigs() {
        assert_eq!(err(""), "empty spec string");
        assert_eq!(
            err("61 * * * *"),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            err("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(err("* * * * 7"), "end of range (7) above maximum (6): 7");
        assert_eq!(
            err("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(
            err("*/0 * * * *"),
            "step of range should be a positive number: */0"
        );
        assert_eq!(err("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert_eq!(err("1/2/3 * * * *"), "too many slashes: 1/2/3");
        assert_eq!(
            err("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            err("1- * * * *"),
            "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"
        );
        assert_eq!(
            err("-1 * * * *"),
            "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"
        );
        assert_eq!(err("*/-1 * * * *"), "negative number (-1) not allowed: -1");
        assert_eq!(
            err("99999999999999999999 * * * *"),
            "failed to parse int from 99999999999999999999: strconv.Atoi: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(
            err("* * * *"),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
        assert_eq!(
            err("0 * * * * *"),
            "expected exactly 5 fields, found 6: [0 * * * * *]"
        );
        assert_eq!(err("@often"), "unrecognized descriptor: @often");
        assert_eq!(
            err("@every 1x"),
            "failed to parse duration @every 1x: time: unknown unit \"x\" in duration \"1x\""
        );
        assert_eq!(
            err("@every 10"),
            "failed to parse duration @every 10: time: missing unit in duration \"10\""
        );
        assert_eq!(
            err("@every abc"),
            "failed to parse duration @every abc: time: invalid duration \"abc\""
        );
        // The first bad field wins, in minute, hour, dom, month, dow order.
        assert_eq!(
            err("* 24 0 * *"),
            "end of range (24) above maximum (23): 24"
        );
        assert_eq!(
            err("* * * foo *"),
            "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax"
        );
        assert_eq!(err("TZ=UTC"), "expected exactly 5 fields, found 0: []");
        assert_eq!(
            err("TZ=a..b * * * * *"),
            "provided bad location a..b: time: invalid location name"
        );
    }

    #[test]
    fn zones_load_from_the_host_database() {
        assert_eq!(load_location("UTC"), Ok(()));
        assert_eq!(load_location(""), Ok(()));
        assert_eq!(load_location("Local"), Ok(()));
        if have_zoneinfo() {
            assert_eq!(
                load_location("Not/AZone"),
                Err("unknown time zone Not/AZone".to_owned())
            );
            assert_eq!(
                err("TZ=Foo/Bar * * * * *"),
                "provided bad location Foo/Bar: unknown time zone Foo/Bar"
            );
        }
    }

    #[test]
    fn go_helpers() {
        assert_eq!(atoi("12"), Ok(12));
        assert_eq!(atoi("-12"), Ok(-12));
        assert_eq!(atoi("+7"), Ok(7));
        assert_eq!(atoi(""), Err(AtoiError::Syntax));
        assert_eq!(atoi("-"), Err(AtoiError::Syntax));
        assert_eq!(atoi("1_0"), Err(AtoiError::Syntax));
        assert_eq!(atoi("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(atoi("9223372036854775808"), Err(AtoiError::Range(i64::MAX)));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration("-1.5s"), Ok(-1_500_000_000));
        assert_eq!(parse_duration(".5ms"), Ok(500_000));
        assert!(parse_duration(".s").is_err());
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
