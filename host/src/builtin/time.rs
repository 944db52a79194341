//! `metav1.Time` and `metav1.MicroTime` as kube-apiserver decodes and writes them
//! (apimachinery's `pkg/apis/meta/v1/time.go` and `micro_time.go`).
//!
//! kube reads a `Time` with Go's `time.Parse(time.RFC3339, s)` and a `MicroTime` with
//! `time.Parse("2006-01-02T15:04:05.000000Z07:00", s)`; `null` is the zero time, and any other
//! JSON value is the error of `json.Unmarshal` into a `string` (the decoder's business). It
//! writes them back in UTC: a `Time` with whole seconds (`2026-12-06T10:00:00Z`, the fraction
//! dropped, as the protobuf it is stored as keeps seconds only), a `MicroTime` with exactly six
//! fraction digits (`2026-12-06T10:00:00.123456Z`, truncated). The zero time
//! (`0001-01-01T00:00:00Z`) is written `null`.
//!
//! [`parse`] is Go's `time.Parse` for those two layouts, step by step (`src/time/format.go`,
//! `parse`; the RFC 3339 fast path `parseRFC3339` accepts a subset of what it accepts), with
//! Go's error texts:
//!
//! - the year is exactly four digits, the month, day, minute and second two; the hour one or
//!   two (`T1:00:00Z` is 01:00);
//! - separators are exact: `T` (not `t` or a space), `-`, `:`;
//! - a `Time` takes any fraction of digits after the seconds, after `.` or `,`, truncated to
//!   nanoseconds; a `MicroTime` exactly six digits after `.` or `,` (the six bytes are read
//!   with Go's `atoi`, so a sign is taken: `.+12345`);
//! - the zone is `Z` (not `z`) or `±hh:mm`, hours up to 24 and minutes up to 60 (Go's range
//!   checks are `>`);
//! - months 1–12, hours below 24, minutes and seconds below 60 (no leap second), and the day
//!   must exist in its month (`2026-02-29` is `day out of range`).

/// Go's `time.RFC3339`, the layout of a `metav1.Time`.
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`, the layout of a `metav1.MicroTime`.
pub const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Go's zero time, 0001-01-01T00:00:00Z, in Unix seconds.
pub const GO_ZERO_UNIX: i64 = -62_135_596_800;

/// Which of kube's two time types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `metav1.Time`: parsed as RFC 3339, written with whole seconds.
    Seconds,
    /// `metav1.MicroTime`: parsed and written with six fraction digits.
    Micros,
}

impl Precision {
    /// The Go layout kube parses this type with.
    pub fn layout(self) -> &'static str {
        match self {
            Precision::Seconds => RFC3339,
            Precision::Micros => RFC3339_MICRO,
        }
    }
}

/// An instant: seconds since the Unix epoch and nanoseconds within that second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    pub secs: i64,
    pub nanos: u32,
}

/// What kube writes for the JSON string `value` of a field of this type: its canonical text,
/// or `None` for Go's zero time (written `null`). `Err`: Go's `time.ParseError` text, which kube
/// returns as the decoding error (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse
/// "x" as "2006"`).
pub fn canonical(precision: Precision, value: &str) -> Result<Option<String>, String> {
    parse(precision, value).map(|t| format(precision, t))
}

/// kube's text for an instant, as it reads back what it stored (protobuf: a `Time`'s seconds, a
/// `MicroTime`'s microseconds) and writes it: `None` for Go's zero time. Years past 9999 or
/// before 0 (an offset can move `0000-01-01` or `9999-12-31` there) are written as Go writes
/// them (`-0001-12-31T23:00:00Z`, `10000-01-01T00:59:00Z`).
pub fn format(precision: Precision, t: Instant) -> Option<String> {
    let micros = match precision {
        Precision::Seconds => 0,
        Precision::Micros => t.nanos / 1_000,
    };
    if t.secs == GO_ZERO_UNIX && micros == 0 {
        return None;
    }
    let days = t.secs.div_euclid(86_400);
    let tod = t.secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let year = if year < 0 {
        format!("-{:04}", year.unsigned_abs())
    } else {
        format!("{year:04}")
    };
    let (h, m, s) = (tod / 3_600, tod / 60 % 60, tod % 60);
    Some(match precision {
        Precision::Seconds => format!("{year}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z"),
        Precision::Micros => {
            format!("{year}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{micros:06}Z")
        }
    })
}

/// Go's `time.Parse(precision.layout(), value)`: the instant, or Go's error text.
pub fn parse(precision: Precision, value: &str) -> Result<Instant, String> {
    Parser {
        value,
        b: value.as_bytes(),
        layout: precision.layout(),
        pos: 0,
    }
    .run(precision)
}

struct Parser<'a> {
    value: &'a str,
    b: &'a [u8],
    layout: &'static str,
    /// Where the rest of the value starts (always at a character boundary where it is shown).
    pos: usize,
}

impl Parser<'_> {
    /// The value from `at` on.
    fn rest(&self, at: usize) -> &str {
        self.value.get(at..).unwrap_or("")
    }

    /// Go's `ParseError` without a message: `cannot parse "REST" as "ELEM"`.
    fn cannot(&self, at: usize, elem: &str) -> String {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(self.value),
            quote(self.layout),
            quote(self.rest(at)),
            quote(elem)
        )
    }

    /// Go's `ParseError` with a range message: `parsing time "V": month out of range`.
    fn out_of_range(&self, what: &str) -> String {
        format!("parsing time {}: {what} out of range", quote(self.value))
    }

    fn digit(&self, i: usize) -> bool {
        self.b.get(i).is_some_and(u8::is_ascii_digit)
    }

    /// Go's `getnum`: one or two digits at `at` (two with `fixed`); the number and where the
    /// rest starts.
    fn getnum(&self, at: usize, fixed: bool) -> Option<(i64, usize)> {
        if !self.digit(at) {
            return None;
        }
        let first = i64::from(self.b[at] - b'0');
        if !self.digit(at + 1) {
            return (!fixed).then_some((first, at + 1));
        }
        Some((first * 10 + i64::from(self.b[at + 1] - b'0'), at + 2))
    }

    /// Go's `skip` of a one-character layout literal.
    fn skip(&mut self, c: u8) -> Result<(), String> {
        if self.b.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.cannot(self.pos, &char::from(c).to_string()))
        }
    }

    /// A two-digit field (`01`, `02`, `04`, `05`): its value, the position moved past it.
    fn two_digits(&mut self, elem: &str) -> Result<i64, String> {
        match self.getnum(self.pos, true) {
            Some((n, next)) => {
                self.pos = next;
                Ok(n)
            }
            None => Err(self.cannot(self.pos, elem)),
        }
    }

    fn run(mut self, precision: Precision) -> Result<Instant, String> {
        // "2006": four bytes, the first a digit, read by `atoi` (so all four digits).
        let hold = self.pos;
        let year = match self.b.get(hold..hold + 4) {
            Some(p) if self.digit(hold) => atoi(p).ok_or_else(|| self.cannot(hold, "2006"))?,
            _ => return Err(self.cannot(hold, "2006")),
        };
        self.pos += 4;
        self.skip(b'-')?;
        let month = self.two_digits("01")?;
        if !(1..=12).contains(&month) {
            return Err(self.out_of_range("month"));
        }
        self.skip(b'-')?;
        let day = self.two_digits("02")?;
        self.skip(b'T')?;
        // "15": one or two digits.
        let hour = match self.getnum(self.pos, false) {
            Some((h, next)) => {
                if h >= 24 {
                    return Err(self.out_of_range("hour"));
                }
                self.pos = next;
                h
            }
            None => return Err(self.cannot(self.pos, "15")),
        };
        self.skip(b':')?;
        let min = self.two_digits("04")?;
        if min >= 60 {
            return Err(self.out_of_range("minute"));
        }
        self.skip(b':')?;
        let sec = self.two_digits("05")?;
        if sec >= 60 {
            return Err(self.out_of_range("second"));
        }
        let mut nanos: i64 = 0;
        match precision {
            Precision::Seconds => {
                // A fraction the layout does not have: `.` or `,` and every digit after it.
                let at = self.pos;
                if matches!(self.b.get(at), Some(b'.' | b',')) && self.digit(at + 1) {
                    let mut end = at + 2;
                    while self.digit(end) {
                        end += 1;
                    }
                    nanos = fraction(&self.b[at + 1..end]);
                    self.pos = end;
                }
            }
            Precision::Micros => {
                // ".000000": exactly a separator and six bytes, read by `atoi`.
                let hold = self.pos;
                let Some(frac) = self.b.get(hold..hold + 7) else {
                    return Err(self.cannot(hold, ".000000"));
                };
                if !matches!(frac[0], b'.' | b',') {
                    return Err(self.cannot(hold, ".000000"));
                }
                let n = atoi(&frac[1..]).ok_or_else(|| self.cannot(hold, ".000000"))?;
                if n < 0 {
                    return Err(self.out_of_range("fractional second"));
                }
                nanos = n * 1_000;
                self.pos += 7;
            }
        }
        // "Z07:00".
        let hold = self.pos;
        let offset = if self.b.get(hold) == Some(&b'Z') {
            self.pos += 1;
            0
        } else {
            let Some(z) = self.b.get(hold..hold + 6) else {
                return Err(self.cannot(hold, "Z07:00"));
            };
            if z[3] != b':' {
                return Err(self.cannot(hold, "Z07:00"));
            }
            let two = |p: &[u8]| match p {
                [a, b] if a.is_ascii_digit() && b.is_ascii_digit() => {
                    Some(i64::from(a - b'0') * 10 + i64::from(b - b'0'))
                }
                _ => None,
            };
            let hr = two(&z[1..3]);
            let mm = hr.and_then(|_| two(&z[4..6]));
            let bad = hr.is_none() || mm.is_none();
            let (hr, mm) = (hr.unwrap_or(0), mm.unwrap_or(0));
            let mut range = None;
            if hr > 24 {
                range = Some("time zone offset hour");
            }
            if mm > 60 {
                range = Some("time zone offset minute");
            }
            let sign = match z[0] {
                b'+' => Some(1),
                b'-' => Some(-1),
                _ => None,
            };
            if let Some(what) = range {
                return Err(self.out_of_range(what));
            }
            let (Some(sign), false) = (sign, bad) else {
                return Err(self.cannot(hold, "Z07:00"));
            };
            self.pos += 6;
            sign * (hr * 60 + mm) * 60
        };
        if self.pos < self.b.len() {
            return Err(format!(
                "parsing time {}: extra text: {}",
                quote(self.value),
                quote(self.rest(self.pos))
            ));
        }
        if !(1..=days_in(month, year)).contains(&day) {
            return Err(self.out_of_range("day"));
        }
        let secs =
            days_from_civil(year, month, day) * 86_400 + hour * 3_600 + min * 60 + sec - offset;
        Ok(Instant {
            secs,
            nanos: u32::try_from(nanos).unwrap_or(0),
        })
    }
}

/// Go's `atoi` (time package): an optional sign, then only digits (none is 0). `None` for
/// anything else.
fn atoi(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    let mut x: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        x = x.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(if neg { -x } else { x })
}

/// Go's `parseNanoseconds` of the digits after a separator: the first nine, scaled to
/// nanoseconds (the rest ignored: truncation).
fn fraction(digits: &[u8]) -> i64 {
    let used = &digits[..digits.len().min(9)];
    let mut ns: i64 = 0;
    for &c in used {
        ns = ns * 10 + i64::from(c - b'0');
    }
    for _ in used.len()..9 {
        ns *= 10;
    }
    ns
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Go's `daysIn`.
pub(crate) fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The time package's `quote`: `"` and `\` escaped, a byte of a character below a space or
/// outside ASCII as `\xNN`.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::Precision::{Micros, Seconds};
    use super::*;

    fn time(s: &str) -> Result<Option<String>, String> {
        canonical(Seconds, s)
    }

    fn micro(s: &str) -> Result<Option<String>, String> {
        canonical(Micros, s)
    }

    fn ok(s: &str) -> Result<Option<String>, String> {
        Ok(Some(s.to_owned()))
    }

    #[test]
    fn times_are_written_in_utc_with_whole_seconds() {
        assert_eq!(time("2026-12-06T10:00:00Z"), ok("2026-12-06T10:00:00Z"));
        assert_eq!(
            time("2026-01-01T10:00:00.5+02:00"),
            ok("2026-01-01T08:00:00Z")
        );
        assert_eq!(
            time("2026-12-06T22:02:18+00:00"),
            ok("2026-12-06T22:02:18Z")
        );
        assert_eq!(
            time("2026-12-06T21:00:00.987654Z"),
            ok("2026-12-06T21:00:00Z")
        );
        assert_eq!(
            time("2026-12-06T21:00:00,123456789123Z"),
            ok("2026-12-06T21:00:00Z")
        );
        // Across midnight, a month and a year; a negative offset.
        assert_eq!(
            time("2026-01-01T01:30:00+02:00"),
            ok("2025-12-31T23:30:00Z")
        );
        assert_eq!(
            time("2024-02-28T23:00:00-01:30"),
            ok("2024-02-29T00:30:00Z")
        );
        // Go's lenient parts: a one-digit hour, offsets of 24 hours or 60 minutes.
        assert_eq!(time("2026-01-01T1:00:00Z"), ok("2026-01-01T01:00:00Z"));
        assert_eq!(
            time("2026-01-02T00:00:00+24:00"),
            ok("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            time("2026-01-01T01:00:00+00:60"),
            ok("2026-01-01T00:00:00Z")
        );
        // Leap days.
        assert_eq!(time("2024-02-29T00:00:00Z"), ok("2024-02-29T00:00:00Z"));
        assert_eq!(time("2000-02-29T00:00:00Z"), ok("2000-02-29T00:00:00Z"));
        // The zero time is written `null`; an offset can take a year out of 0..9999.
        assert_eq!(time("0001-01-01T00:00:00Z"), Ok(None));
        assert_eq!(time("0001-01-01T00:00:00.5Z"), Ok(None));
        assert_eq!(time("0001-01-01T01:00:00+01:00"), Ok(None));
        assert_eq!(time("1970-01-01T00:00:00Z"), ok("1970-01-01T00:00:00Z"));
        assert_eq!(
            time("0000-01-01T00:00:00+01:00"),
            ok("-0001-12-31T23:00:00Z")
        );
        assert_eq!(
            time("9999-12-31T23:59:59-01:00"),
            ok("10000-01-01T00:59:59Z")
        );
    }

    #[test]
    fn micro_times_take_exactly_six_fraction_digits() {
        assert_eq!(
            micro("2026-12-06T21:00:00.123456Z"),
            ok("2026-12-06T21:00:00.123456Z")
        );
        assert_eq!(
            micro("2026-12-06T21:00:00.000001+02:00"),
            ok("2026-12-06T19:00:00.000001Z")
        );
        assert_eq!(
            micro("2026-12-06T21:00:00,500000Z"),
            ok("2026-12-06T21:00:00.500000Z")
        );
        // Go's `atoi` reads the six bytes, sign included.
        assert_eq!(
            micro("2026-12-06T21:00:00.+12345Z"),
            ok("2026-12-06T21:00:00.012345Z")
        );
        assert_eq!(
            micro("2026-12-06T21:00:00.-00000Z"),
            ok("2026-12-06T21:00:00.000000Z")
        );
        assert_eq!(micro("0001-01-01T00:00:00.000000Z"), Ok(None));
        assert_eq!(
            micro("0001-01-01T00:00:00.000001Z"),
            ok("0001-01-01T00:00:00.000001Z")
        );
        let layout = "\"2006-01-02T15:04:05.000000Z07:00\"";
        for (value, rest, elem) in [
            ("2026-12-06T21:00:00Z", "Z", ".000000"),
            ("2026-12-06T21:00:00+02:00", "+02:00", ".000000"),
            ("2026-12-06T21:00:00.5Z", ".5Z", ".000000"),
            ("2026-12-06T21:00:00.123Z", ".123Z", ".000000"),
            ("2026-12-06T21:00:00.123+02:00", ".123+02:00", ".000000"),
            ("2026-12-06T21:00:00.123456789Z", "789Z", "Z07:00"),
            ("2026-12-06T21:00:00.1234567+02:00", "7+02:00", "Z07:00"),
            ("garbage", "garbage", "2006"),
        ] {
            assert_eq!(
                micro(value),
                Err(format!(
                    "parsing time \"{value}\" as {layout}: cannot parse \"{rest}\" as \"{elem}\""
                )),
                "{value}"
            );
        }
        assert_eq!(
            micro("2026-12-06T21:00:00.-00001Z"),
            Err(
                "parsing time \"2026-12-06T21:00:00.-00001Z\": fractional second out of range"
                    .into()
            )
        );
    }

    #[test]
    fn what_go_refuses_with_its_message() {
        let layout = "\"2006-01-02T15:04:05Z07:00\"";
        for (value, rest, elem) in [
            ("garbage", "garbage", "2006"),
            ("", "", "2006"),
            ("26-12-06T10:00:00Z", "26-12-06T10:00:00Z", "2006"),
            ("2026/12/06T10:00:00Z", "/12/06T10:00:00Z", "-"),
            ("2026-1-06T10:00:00Z", "1-06T10:00:00Z", "01"),
            ("2026-12-6T10:00:00Z", "6T10:00:00Z", "02"),
            ("2026-12-06t10:00:00Z", "t10:00:00Z", "T"),
            ("2026-12-06 10:00:00Z", " 10:00:00Z", "T"),
            ("2026-12-06", "", "T"),
            ("2026-12-06Tx:00:00Z", "x:00:00Z", "15"),
            ("2026-12-06T10:0:00Z", "0:00Z", "04"),
            ("2026-12-06T10:00Z", "Z", ":"),
            ("2026-12-06T10:00:00z", "z", "Z07:00"),
            ("2026-12-06T10:00:00", "", "Z07:00"),
            ("2026-12-06T10:00:00+0200", "+0200", "Z07:00"),
            ("2026-12-06T10:00:00+02", "+02", "Z07:00"),
            ("2026-12-06T10:00:00 02:00", " 02:00", "Z07:00"),
            ("2026-12-06T10:00:00+0a:00", "+0a:00", "Z07:00"),
            ("2026-12-06T10:00:00.Z", ".Z", "Z07:00"),
            ("é", "é", "2006"),
        ] {
            let want = format!(
                "parsing time {} as {layout}: cannot parse {} as \"{elem}\"",
                quote(value),
                quote(rest)
            );
            assert_eq!(time(value), Err(want), "{value}");
        }
        for (value, what) in [
            ("2026-13-06T10:00:00Z", "month"),
            ("2026-00-06T10:00:00Z", "month"),
            ("2026-12-06T24:00:00Z", "hour"),
            ("2026-12-06T10:60:00Z", "minute"),
            ("2026-12-06T23:59:60Z", "second"),
            ("2026-12-06T10:00:00+25:00", "time zone offset hour"),
            ("2026-12-06T10:00:00+02:61", "time zone offset minute"),
            ("2026-02-29T10:00:00Z", "day"),
            ("2026-04-31T10:00:00Z", "day"),
            ("2026-12-00T10:00:00Z", "day"),
            ("1900-02-29T10:00:00Z", "day"),
        ] {
            assert_eq!(
                time(value),
                Err(format!("parsing time \"{value}\": {what} out of range")),
                "{value}"
            );
        }
        assert_eq!(
            time("2026-12-06T10:00:00Zjunk"),
            Err("parsing time \"2026-12-06T10:00:00Zjunk\": extra text: \"junk\"".into())
        );
        assert_eq!(
            time("2026-12-06T10:00:00+02:00:00"),
            Err("parsing time \"2026-12-06T10:00:00+02:00:00\": extra text: \":00\"".into())
        );
        // Go's quoting of what it cannot parse.
        assert_eq!(
            time("a\"b\\\u{1}é"),
            Err(format!(
                "parsing time {q} as {layout}: cannot parse {q} as \"2006\"",
                q = "\"a\\\"b\\\\\\x01\\xc3\\xa9\""
            ))
        );
    }

    #[test]
    fn dates_round_trip_through_days() {
        for days in [
            -800_000, -719_163, -719_162, -1, 0, 1, 11_016, 20_000, 2_932_896,
        ] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(1, 1, 1) * 86_400, GO_ZERO_UNIX);
        assert_eq!(
            parse(Seconds, "2026-12-06T10:00:00Z"),
            Ok(Instant {
                secs: 1_796_551_200,
                nanos: 0
            })
        );
    }
}
