package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/jackc/pgx/v5"
)

// maxNotifyPath is the longest path a notification carries; a change of
// a longer path is sent without it, and the listener reads it back.
// NOTIFY payloads are limited to 8000 bytes.
const maxNotifyPath = 7900 - 64

// encodeChange is the NOTIFY payload of a change: "id tail flags path",
// flags being c (closed), n (created) and d (deleted), or "-".
func encodeChange(c store.TailChange) string {
	flags := ""
	if c.Closed {
		flags += "c"
	}
	if c.Created {
		flags += "n"
	}
	if c.Deleted {
		flags += "d"
	}
	if flags == "" {
		flags = "-"
	}
	p := c.Path
	if len(p) > maxNotifyPath {
		p = ""
	}
	return strconv.FormatInt(c.StreamID, 10) + " " + strconv.FormatInt(c.Tail, 10) + " " + flags + " " + p
}

// decodeChange is the inverse of encodeChange; long reports a path left
// out.
func decodeChange(payload string) (c store.TailChange, long bool, err error) {
	f := strings.SplitN(payload, " ", 4)
	if len(f) != 4 {
		return c, false, fmt.Errorf("malformed change %q", payload)
	}
	if c.StreamID, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return c, false, fmt.Errorf("malformed change %q: %w", payload, err)
	}
	if c.Tail, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return c, false, fmt.Errorf("malformed change %q: %w", payload, err)
	}
	c.Closed = strings.Contains(f[2], "c")
	c.Created = strings.Contains(f[2], "n")
	c.Deleted = strings.Contains(f[2], "d")
	c.Path = f[3]
	return c, c.Path == "", nil
}

// noteWait bounds how long a write waits for its notifications to come
// back (they do not while the listen connection is being opened again).
const noteWait = 5 * time.Second

// notify announces changes in tx (see announce).
func (s *Store) notify(ctx context.Context, tx *wtx, changes ...store.TailChange) error {
	for _, c := range changes {
		if err := s.announce(ctx, tx, encodeChange(c)); err != nil {
			return err
		}
	}
	return nil
}

// invalidate announces in tx that cached items changed (see announce).
func (s *Store) invalidate(ctx context.Context, tx *wtx, items ...store.Invalidation) error {
	for _, inv := range items {
		if err := s.announce(ctx, tx, encodeInvalidation(inv)); err != nil {
			return err
		}
	}
	return nil
}

// announce sends one notification in tx: PostgreSQL delivers it to every
// listener when tx commits, in commit order, and never if it rolls back.
// Each carries this handle's id and a number, so the listener can tell
// the writer, which waits for them after the commit (tx): a write's
// changes are published to this handle's Notifier before it returns, as
// in every backend, and in commit order.
func (s *Store) announce(ctx context.Context, tx *wtx, change string) error {
	seq := s.noteSeq.Add(1)
	s.notesMu.Lock()
	s.notes[seq] = make(chan struct{})
	s.notesMu.Unlock()
	tx.notes = append(tx.notes, seq)
	payload := s.owner + ":" + strconv.FormatUint(seq, 10) + " " + change
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, payload); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// invalidationMark starts the payload of an invalidation, which no
// stream change starts with (those start with a stream id).
const invalidationMark = "@"

// cacheKindCodes are the letters that name each CacheKind in a payload.
var cacheKindCodes = map[store.CacheKind]string{store.CacheSubscription: "s", store.CacheEndpoint: "e", store.CacheKey: "k", store.CacheReservedSubscription: "r", store.CacheSigningKey: "g"}

// everyKind invalidates every item of every kind that crosses the
// notification channel: what a change that cannot be decoded may have
// been.
var everyKind = func() []store.Invalidation {
	all := make([]store.Invalidation, 0, len(cacheKindCodes))
	for kind := range cacheKindCodes {
		all = append(all, store.Invalidation{Kind: kind})
	}
	return all
}()

// encodeInvalidation is the NOTIFY payload of an invalidation: "@k id",
// k naming the kind. An id too long for a payload is left out, which
// invalidates every item of the kind.
func encodeInvalidation(inv store.Invalidation) string {
	id := inv.ID
	if len(id) > maxNotifyPath {
		id = ""
	}
	return invalidationMark + cacheKindCodes[inv.Kind] + " " + id
}

// decodeInvalidation is the inverse of encodeInvalidation; ok is false
// for a payload that is not an invalidation.
func decodeInvalidation(payload string) (inv store.Invalidation, ok bool, err error) {
	rest, isInv := strings.CutPrefix(payload, invalidationMark)
	if !isInv {
		return inv, false, nil
	}
	code, id, found := strings.Cut(rest, " ")
	if !found {
		return inv, true, fmt.Errorf("malformed invalidation %q", payload)
	}
	for k, c := range cacheKindCodes {
		if c == code {
			return store.Invalidation{Kind: k, ID: id}, true, nil
		}
	}
	return inv, true, fmt.Errorf("invalidation of an unknown kind %q", payload)
}

// awaitNotes waits until the listener received the notifications of a
// committed transaction.
func (s *Store) awaitNotes(ctx context.Context, seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	timeout := time.NewTimer(noteWait)
	defer timeout.Stop()
	for _, seq := range seqs {
		s.notesMu.Lock()
		ch, ok := s.notes[seq]
		s.notesMu.Unlock()
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.forgetNotes(seqs)
			return
		case <-timeout.C:
			s.log.Warn("stream change notifications are late; the change feed may have missed some")
			s.forgetNotes(seqs)
			return
		}
	}
}

// forgetNotes drops the wait of notifications that will not come (their
// transaction rolled back) or that nobody waits for any more.
func (s *Store) forgetNotes(seqs []uint64) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	for _, seq := range seqs {
		delete(s.notes, seq)
	}
}

// delivered tells the writer of one of this handle's notifications that
// the listener has it.
func (s *Store) delivered(seq uint64) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	if ch, ok := s.notes[seq]; ok {
		close(ch)
		delete(s.notes, seq)
	}
}

// releaseNotes lets every writer waiting for its notifications go: the
// feed was lost, so they may never come (the Hub is reset instead).
func (s *Store) releaseNotes() {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	for seq, ch := range s.notes {
		close(ch)
		delete(s.notes, seq)
	}
}

// splitNote splits a notification into its sender's handle id and number
// and the change.
func splitNote(payload string) (owner string, seq uint64, change string, err error) {
	head, change, ok := strings.Cut(payload, " ")
	owner, num, ok2 := strings.Cut(head, ":")
	if !ok || !ok2 {
		return "", 0, "", fmt.Errorf("malformed notification %q", payload)
	}
	if seq, err = strconv.ParseUint(num, 10, 64); err != nil {
		return "", 0, "", fmt.Errorf("malformed notification %q: %w", payload, err)
	}
	return owner, seq, change, nil
}

// listen feeds the Hub from the LISTEN connection until ctx ends. A lost
// connection is opened again, once a second until it opens; changes made
// meanwhile are not seen, so when it is back the Hub is reset: waiters
// read again, and engines reload their caches and look at every stream.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn, cfg *pgx.ConnConfig) {
	defer s.wg.Done()
	defer func() {
		if conn != nil {
			if err := conn.Close(context.Background()); err != nil {
				s.log.Warn("close the listen connection", "err", err)
			}
		}
	}()
	for {
		if conn == nil {
			var err error
			if conn, err = s.relisten(ctx, cfg); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("listen for stream changes", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(relistenDelay):
				}
				continue
			}
			s.log.Info("stream change feed is back; caches are reloaded")
			s.hub.Reset()
			s.releaseNotes()
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("stream change feed lost; reconnecting", "err", err)
			if cerr := conn.Close(context.Background()); cerr != nil {
				s.log.Warn("close the listen connection", "err", cerr)
			}
			conn = nil
			continue
		}
		s.received(ctx, n.Payload)
	}
}

// relistenDelay is how long listen waits between two failed attempts to
// open the LISTEN connection again.
const relistenDelay = time.Second

// received publishes one notification to the Hub and, when this handle
// sent it, tells its writer.
func (s *Store) received(ctx context.Context, payload string) {
	owner, seq, change, err := splitNote(payload)
	if err != nil {
		s.log.Warn("stream change feed", "err", err)
		return
	}
	if owner == s.owner {
		defer s.delivered(seq)
	}
	if inv, ok, err := decodeInvalidation(change); ok {
		if err != nil {
			s.log.Warn("stream change feed", "err", err)
			// Not knowing what changed, every item of every kind is.
			s.hub.Invalidate(everyKind...)
			return
		}
		s.hub.Invalidate(inv)
		return
	}
	c, long, err := decodeChange(change)
	if err != nil {
		s.log.Warn("stream change feed", "err", err)
		return
	}
	if long {
		if err := s.pool.QueryRow(ctx, `SELECT path FROM streams WHERE id = $1`, c.StreamID).Scan(&c.Path); err != nil && !isNoRows(err) {
			s.log.Warn("read the path of a changed stream", "err", err)
		}
	}
	s.hub.Publish(c)
}

// relisten opens a new LISTEN connection.
func (s *Store) relisten(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return nil, errors.Join(err, conn.Close(ctx))
	}
	return conn, nil
}
