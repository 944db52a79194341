package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// schedule is a parsed standard cron schedule (minute hour day-of-month month day-of-week), with
// the semantics of the cron library kube uses (robfig/cron ParseStandard): ranges `a-b`, steps
// `*/n`, `a-b/n` and `a/n` (a to the maximum), lists, `*` and `?`, month names JAN-DEC and day
// names SUN-SAT, and the descriptors @yearly/@annually, @monthly, @weekly, @daily/@midnight,
// @hourly. When both day-of-month and day-of-week are restricted, a day matching either runs.
type schedule struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7,
	"aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

func parseSchedule(spec string) (*schedule, error) {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "@") {
		std, ok := descriptors[strings.ToLower(spec)]
		if !ok {
			return nil, fmt.Errorf("unrecognized descriptor: %s", spec)
		}
		spec = std
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), spec)
	}
	var s schedule
	var err error
	if s.minute, _, err = parseField(fields[0], 0, 59, nil); err != nil {
		return nil, err
	}
	if s.hour, _, err = parseField(fields[1], 0, 23, nil); err != nil {
		return nil, err
	}
	if s.dom, s.domStar, err = parseField(fields[2], 1, 31, nil); err != nil {
		return nil, err
	}
	if s.month, _, err = parseField(fields[3], 1, 12, monthNames); err != nil {
		return nil, err
	}
	if s.dow, s.dowStar, err = parseField(fields[4], 0, 6, dayNames); err != nil {
		return nil, err
	}
	return &s, nil
}

// parseField returns the bit set of allowed values, and whether the field is `*` or `?`.
func parseField(field string, lo, hi int, names map[string]int) (uint64, bool, error) {
	var bits uint64
	star := false
	for _, part := range strings.Split(field, ",") {
		rangePart, stepPart, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepPart)
			if err != nil || n <= 0 {
				return 0, false, fmt.Errorf("bad step in %q", part)
			}
			step = n
		}
		var from, to int
		switch {
		case rangePart == "*" || rangePart == "?":
			from, to = lo, hi
			if !hasStep {
				star = true
			}
		default:
			a, b, isRange := strings.Cut(rangePart, "-")
			var err error
			if from, err = value(a, names); err != nil {
				return 0, false, err
			}
			to = from
			if isRange {
				if to, err = value(b, names); err != nil {
					return 0, false, err
				}
			} else if hasStep {
				to = hi // "a/n": from a to the maximum
			}
		}
		if from < lo || to > hi || from > to {
			return 0, false, fmt.Errorf("%q is out of range %d-%d", part, lo, hi)
		}
		for v := from; v <= to; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, star, nil
}

func value(s string, names map[string]int) (int, error) {
	if n, ok := names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s", s)
	}
	return n, nil
}

func (s *schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// next is the first activation strictly after t, in t's location (zero after 5 years of none).
func (s *schedule) next(t time.Time) time.Time {
	loc := t.Location()
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}
