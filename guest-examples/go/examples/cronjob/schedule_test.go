package main

import (
	"testing"
	"time"
)

func TestScheduleNext(t *testing.T) {
	base := time.Date(2026, 3, 14, 10, 7, 30, 0, time.UTC) // a Saturday
	cases := []struct{ spec, want string }{
		{"*/1 * * * *", "2026-03-14T10:08:00Z"},
		{"*/15 * * * *", "2026-03-14T10:15:00Z"},
		{"5 * * * *", "2026-03-14T11:05:00Z"},
		{"0 9-17/2 * * *", "2026-03-14T11:00:00Z"},
		{"30 10 * * MON-FRI", "2026-03-16T10:30:00Z"},
		{"0 0 1 * *", "2026-04-01T00:00:00Z"},
		{"0 0 13 * FRI", "2026-03-20T00:00:00Z"}, // day-of-month OR day-of-week when both are set
		{"0 0 * JAN *", "2027-01-01T00:00:00Z"},
		{"10/20 * * * *", "2026-03-14T10:10:00Z"},
		{"1,2,3 0 ? * *", "2026-03-15T00:01:00Z"},
		{"@hourly", "2026-03-14T11:00:00Z"},
		{"@daily", "2026-03-15T00:00:00Z"},
		{"@weekly", "2026-03-15T00:00:00Z"},
		{"@monthly", "2026-04-01T00:00:00Z"},
		{"@yearly", "2027-01-01T00:00:00Z"},
		{"0 0 29 2 *", "2028-02-29T00:00:00Z"},
	}
	for _, c := range cases {
		s, err := parseSchedule(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if got := s.next(base).Format(time.RFC3339); got != c.want {
			t.Errorf("next(%q) = %s, want %s", c.spec, got, c.want)
		}
	}
}

func TestScheduleInTimeZone(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Kolkata") // +05:30
	if err != nil {
		t.Fatal(err)
	}
	s, _ := parseSchedule("0 9 * * *")
	got := s.next(time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC).In(loc))
	if got.UTC().Format(time.RFC3339) != "2026-03-14T03:30:00Z" {
		t.Fatalf("9:00 in Kolkata: %s", got.UTC())
	}
	s, _ = parseSchedule("30 * * * *")
	got = s.next(time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC).In(loc)) // 05:30 local: strictly after
	if got.UTC().Format(time.RFC3339) != "2026-03-14T01:00:00Z" {
		t.Fatalf("minute 30 in Kolkata: %s", got.UTC())
	}
	s, _ = parseSchedule("30 9 * * *") // hours step in local time (a half-hour offset)
	got = s.next(time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC).In(loc))
	if got.UTC().Format(time.RFC3339) != "2026-03-14T04:00:00Z" {
		t.Fatalf("9:30 in Kolkata: %s", got.UTC())
	}
}

func TestScheduleErrors(t *testing.T) {
	for _, bad := range []string{"", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 7",
		"*/0 * * * *", "5-1 * * * *", "@every 5m", "x * * * *"} {
		if _, err := parseSchedule(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
