package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry schedule limits.
const (
	// MaxScheduleEntries bounds the attempts of one delivery.
	MaxScheduleEntries = 20
	// MaxScheduleStep bounds one step of a schedule (three days).
	MaxScheduleStep = 72 * time.Hour
	// MaxRetryAfter bounds how far a Retry-After header can push the next
	// attempt.
	MaxRetryAfter = 24 * time.Hour
)

// maxParsedRetryAfter caps ParseRetryAfter so huge values cannot overflow.
const maxParsedRetryAfter = 365 * 24 * time.Hour

// Schedule is a retry schedule: entry i is the delay before attempt i+1,
// counted from the creation of the delivery for the first attempt and from
// the failure of the previous attempt for the others. Its length is the
// number of attempts; after the last one fails the delivery is exhausted.
//
// In JSON it is an array of Go durations ("5s", "2h") or integers of
// seconds, as strings or numbers: ["0", "5s", "5m"] or [0, 5, 300].
type Schedule []time.Duration

// DefaultSchedule is docs/delivery.md's (Retries): immediately, then 5 s, 5
// min, 30 min, 2 h, 8 h and 24 h after each failure; seven attempts over
// about 34.5 hours.
func DefaultSchedule() Schedule {
	return Schedule{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour, 24 * time.Hour}
}

// ParseSchedule parses and validates schedule entries, each a Go duration
// ("90s", "1h30m") or an integer of seconds ("300"). Errors are
// *ValidationError with CodeInvalidRetrySchedule.
func ParseSchedule(entries []string) (Schedule, error) {
	s := make(Schedule, 0, len(entries))
	for i, e := range entries {
		d, err := parseStep(e)
		if err != nil {
			return nil, &ValidationError{Code: CodeInvalidRetrySchedule, Field: fmt.Sprintf("retry_schedule[%d]", i), Message: err.Error(), Err: err}
		}
		s = append(s, d)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func parseStep(e string) (time.Duration, error) {
	e = strings.TrimSpace(e)
	if e == "" {
		return 0, fmt.Errorf("empty entry; use \"0\" for no delay")
	}
	if allDigits(e) {
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil || n > int64(MaxScheduleStep/time.Second) {
			return 0, fmt.Errorf("%q seconds is over the maximum of %s", e, formatStep(MaxScheduleStep))
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(e)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration (\"5m\", \"2h\") nor a number of seconds", e)
	}
	return d, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Validate checks 1 to MaxScheduleEntries steps, each from 0 to
// MaxScheduleStep.
func (s Schedule) Validate() error {
	if len(s) == 0 {
		return Invalid(CodeInvalidRetrySchedule, "retry_schedule", "at least one entry is needed (the delay of the first attempt, usually \"0\")")
	}
	if len(s) > MaxScheduleEntries {
		return Invalid(CodeInvalidRetrySchedule, "retry_schedule", "%d entries, over the limit of %d", len(s), MaxScheduleEntries)
	}
	for i, d := range s {
		field := fmt.Sprintf("retry_schedule[%d]", i)
		if d < 0 {
			return Invalid(CodeInvalidRetrySchedule, field, "%s is negative", d)
		}
		if d > MaxScheduleStep {
			return Invalid(CodeInvalidRetrySchedule, field, "%s is over the maximum of %s", formatStep(d), formatStep(MaxScheduleStep))
		}
	}
	return nil
}

// Strings returns the entries in the form ParseSchedule reads.
func (s Schedule) Strings() []string {
	out := make([]string, len(s))
	for i, d := range s {
		out[i] = formatStep(d)
	}
	return out
}

// MarshalJSON writes the schedule as an array of duration strings.
func (s Schedule) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	return json.Marshal(s.Strings())
}

// UnmarshalJSON reads an array of duration strings or numbers of seconds,
// and validates it. null leaves the schedule nil (the default applies).
func (s *Schedule) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*s = nil
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return &ValidationError{Code: CodeInvalidRetrySchedule, Field: "retry_schedule", Message: "must be an array of durations like [\"0\", \"5s\", \"5m\"]", Err: err}
	}
	entries := make([]string, len(items))
	for i, it := range items {
		var str string
		if err := json.Unmarshal(it, &str); err == nil {
			entries[i] = str
			continue
		}
		var num json.Number
		if err := json.Unmarshal(it, &num); err != nil || !allDigits(num.String()) {
			return Invalid(CodeInvalidRetrySchedule, fmt.Sprintf("retry_schedule[%d]", i), "must be a duration string or a non-negative integer of seconds")
		}
		entries[i] = num.String()
	}
	parsed, err := ParseSchedule(entries)
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// formatStep writes a duration in its shortest whole unit ("5m", "24h"),
// else as Go prints it.
func formatStep(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// NextAttempt decides when a delivery is attempted next, after
// attemptsMade attempts (0 for a new delivery: its first attempt is at
// now + schedule[0]). When every step is used it returns exhausted.
//
// retryAfter is the Retry-After of the last response (0 when none; see
// ParseRetryAfter). It can only lengthen a step, and by at most
// MaxRetryAfter: the delay is max(step, min(retryAfter, MaxRetryAfter)).
// A receiver cannot make Herald retry sooner than the schedule says, nor
// park a delivery for longer than a day per attempt. A nil schedule is
// DefaultSchedule.
func NextAttempt(schedule Schedule, attemptsMade int, now time.Time, retryAfter time.Duration) (at time.Time, exhausted bool) {
	if schedule == nil {
		schedule = DefaultSchedule()
	}
	if attemptsMade < 0 {
		attemptsMade = 0
	}
	if attemptsMade >= len(schedule) {
		return time.Time{}, true
	}
	delay := schedule[attemptsMade]
	if attemptsMade > 0 {
		delay = max(delay, min(retryAfter, MaxRetryAfter))
	}
	return now.Add(delay), false
}

// ParseRetryAfter reads a Retry-After header: a non-negative integer of
// seconds, or an HTTP date (a date in the past means 0). Values are capped
// at one year. ok is false when the header is absent or malformed.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(maxParsedRetryAfter/time.Second) {
			return maxParsedRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > maxParsedRetryAfter:
		return maxParsedRetryAfter, true
	}
	return d, true
}
