package subscription

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Fixtures shared by the state machine tests. Offsets have Herald's shape
// (protocol.FormatOffset), written out here so the tests pin the format the
// machine must handle rather than borrow it.

const (
	subID = "agent-handler"
	pA    = "/agents/task-1"     // primary stream
	pB    = "/common/task-1"     // secondary stream
	pC    = "/tools/task-1"      // a stream that does not exist yet
	pD    = "/scratch/task-1/d0" // another secondary
)

var (
	t0        = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	start     = off(0)
	wakeZero  = "w_" + strings.Repeat("0", 32) // NewWakeID from zeroReader
	consumerA = ConsumerID(subID, pA)
)

// off is the offset token of position n.
func off(n int64) string {
	const pow16 = 10_000_000_000_000_000
	return fmt.Sprintf("%016d_%016d", n/pow16, n%pow16)
}

// zeroReader yields zero bytes: wake id wakeZero and no retry jitter.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// failingReader fails every read.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

func machine() *Machine { return &Machine{Rand: zeroReader{}} }

func tails(a, b int64) Tails { return Tails{pA: off(a), pB: off(b)} }

// idle is a consumer after three wake cycles, all processed: pA acked to
// 10, pB to 5.
func idle() Consumer {
	return Consumer{
		ID:             consumerA,
		SubscriptionID: subID,
		PrimaryStream:  pA,
		State:          StateIdle,
		Epoch:          3,
		WakeID:         "w_old",
		Streams: []StreamCursor{
			{Path: pA, Acked: off(10), Notified: off(10)},
			{Path: pB, Acked: off(5), Notified: off(5)},
		},
		Attempts: 1,
	}
}

// waking is idle() woken at t0 by two events on pA (tail 12).
func waking() Consumer {
	return with(idle(), func(c *Consumer) {
		c.State = StateWaking
		c.Epoch = 4
		c.WakeID = "w_cur"
		c.Streams[0].Notified = off(12)
		c.Attempts = 1
		c.WakingDeadline = t0.Add(WakingTimeout)
	})
}

// live is waking() claimed at t0.
func live() Consumer {
	return with(waking(), func(c *Consumer) {
		c.State = StateLive
		c.WakingDeadline = time.Time{}
		c.LivenessDeadline = t0.Add(LivenessTimeout)
	})
}

// with returns a deep copy of c changed by f.
func with(c Consumer, f func(*Consumer)) Consumer {
	c = c.Clone()
	f(&c)
	return c
}

// wakeEffects are the effects of starting delivery attempt n of the wake
// of c at now.
func wakeEffects(c Consumer, attempt int, now time.Time) []Effect {
	m := machine()
	return []Effect{
		SendWake{Wake: m.payload(&c), Attempt: attempt},
		ArmTimer{Timer: TimerWaking, At: now.Add(WakingTimeout)},
	}
}

// decideCase is one row of a transition table.
type decideCase struct {
	name    string
	c       Consumer
	ev      Event
	now     time.Time
	want    Consumer
	effects []Effect
	err     error
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig := tt.c.Clone()
			got, effects, err := machine().Decide(tt.c, tt.ev, tt.now)
			if !reflect.DeepEqual(tt.c, orig) {
				t.Fatalf("Decide mutated its argument:\n%+v\nwas\n%+v", tt.c, orig)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error = %v, want %v", err, tt.err)
				}
				if !reflect.DeepEqual(got, orig) || effects != nil {
					t.Fatalf("a failed Decide changed the consumer or returned effects: %+v %+v", got, effects)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("consumer:\n got  %+v\n want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(effects, tt.effects) {
				t.Errorf("effects:\n got  %#v\n want %#v", effects, tt.effects)
			}
		})
	}
}
