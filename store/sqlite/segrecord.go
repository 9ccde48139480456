package sqlite

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/streamrules"
)

// A segment of format 2 is a sequence of records, one per group commit
// that wrote to it:
//
//	prefix (recPrefix bytes, little endian):
//	  magic    u32  recMagic
//	  flags    u32  recReplay: the commit's transaction was not synced
//	  seq      u64  the commit's number: each record's is its
//	                predecessor's plus one
//	  dataLen  u64  bytes of stream data that follow the prefix
//	  metaLen  u32  bytes of entries that follow the data
//	  crc      u32  CRC-32C of the data, the entries and the prefix's
//	                first 28 bytes, in that order
//	data: the batch's appended bytes, where the chunks index them
//	meta: one entry per stream change an append made (segEntry)
//
// The record is what makes the segment's fdatasync the one durability
// point of a batch of appends: the database commits their index without
// a sync of its own, and an open replays the records past what the
// database holds (segrecover.go). A record is valid only whole (its
// checksum) and only in sequence (its number), so the bytes of a torn
// write, of zeros written ahead, or of a failed batch that a shorter one
// wrote over in part are never taken for one.
const (
	recPrefix = 32
	recMagic  = 0x31425248 // "HRB1"
	// recReplay marks a record whose batch committed without syncing
	// the database: if the database lost its commit, the open replays
	// it. A record without it belongs to a batch whose commit was synced
	// before any of it was acknowledged; the database lacking it means
	// the batch never committed, so nothing from it on is replayed.
	recReplay = 1
)

// segFormat is the format of the segments this Herald writes; format 1
// segments (written before records) hold bare bytes.
const segFormat = 2

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// recHeader is a record's prefix.
type recHeader struct {
	flags   uint32
	seq     uint64
	dataLen int64
	metaLen int64
}

// put writes h into p (recPrefix bytes), with its checksum: crc is the
// CRC of the data and the entries.
func (h recHeader) put(p []byte, crc uint32) {
	binary.LittleEndian.PutUint32(p[0:], recMagic)
	binary.LittleEndian.PutUint32(p[4:], h.flags)
	binary.LittleEndian.PutUint64(p[8:], h.seq)
	binary.LittleEndian.PutUint64(p[16:], uint64(h.dataLen))
	binary.LittleEndian.PutUint32(p[24:], uint32(h.metaLen))
	binary.LittleEndian.PutUint32(p[28:], crc32.Update(crc, crcTable, p[:28]))
}

// parseHeader reads a prefix; ok is false when p holds none (zeros, or
// bytes that were not a record's start).
func parseHeader(p []byte) (h recHeader, crc uint32, ok bool) {
	if binary.LittleEndian.Uint32(p[0:]) != recMagic {
		return h, 0, false
	}
	h.flags = binary.LittleEndian.Uint32(p[4:])
	h.seq = binary.LittleEndian.Uint64(p[8:])
	h.dataLen = int64(binary.LittleEndian.Uint64(p[16:]))
	h.metaLen = int64(binary.LittleEndian.Uint32(p[24:]))
	return h, binary.LittleEndian.Uint32(p[28:]), h.dataLen >= 0
}

// segEntry is one stream change of an append, as its record keeps it:
// enough to write again the chunk, the stream row and the producer row
// the batch's transaction wrote.
type segEntry struct {
	stream int64
	start  int64 // the stream's tail before the append
	n      int64 // bytes appended (0: a close without data)
	off    int64 // where they lie in the segment
	// accessedAt is the stream's access time the append wrote (Unix ns).
	accessedAt int64
	closed     bool
	closedBy   *store.Producer // the producer that closed it, if one did
	lastSeq    string          // the Stream-Seq it set, "" when none
	// producer is the producer state the append wrote, when it changed.
	producerID string
	producer   streamrules.ProducerState
}

const (
	entClosed = 1 << iota
	entClosedBy
	entLastSeq
	entProducer
)

// appendEntry appends e's encoding to p.
func appendEntry(p []byte, e *segEntry) []byte {
	var flags byte
	if e.closed {
		flags |= entClosed
	}
	if e.closedBy != nil {
		flags |= entClosedBy
	}
	if e.lastSeq != "" {
		flags |= entLastSeq
	}
	if e.producerID != "" {
		flags |= entProducer
	}
	p = append(p, flags)
	for _, v := range [...]int64{e.stream, e.start, e.n, e.off, e.accessedAt} {
		p = binary.AppendVarint(p, v)
	}
	if e.closedBy != nil {
		p = appendString(p, e.closedBy.ID)
		p = binary.AppendVarint(p, e.closedBy.Epoch)
		p = binary.AppendVarint(p, e.closedBy.Seq)
	}
	if e.lastSeq != "" {
		p = appendString(p, e.lastSeq)
	}
	if e.producerID != "" {
		p = appendString(p, e.producerID)
		p = binary.AppendVarint(p, e.producer.Epoch)
		p = binary.AppendVarint(p, e.producer.LastSeq)
	}
	return p
}

func appendString(p []byte, s string) []byte {
	return append(binary.AppendUvarint(p, uint64(len(s))), s...)
}

var errBadEntry = errors.New("sqlite: segment record: malformed entry")

// entryReader decodes a record's entries.
type entryReader struct {
	p   []byte
	err error
}

func (r *entryReader) varint() int64 {
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.err, r.p = errBadEntry, nil
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *entryReader) string() string {
	l, n := binary.Uvarint(r.p)
	if n <= 0 || l > uint64(len(r.p)-n) {
		r.err, r.p = errBadEntry, nil
		return ""
	}
	s := string(r.p[n : n+int(l)])
	r.p = r.p[n+int(l):]
	return s
}

// next decodes the next entry; false at the end or on an error (r.err).
func (r *entryReader) next(e *segEntry) bool {
	if len(r.p) == 0 || r.err != nil {
		return false
	}
	flags := r.p[0]
	r.p = r.p[1:]
	*e = segEntry{closed: flags&entClosed != 0}
	e.stream, e.start, e.n, e.off, e.accessedAt = r.varint(), r.varint(), r.varint(), r.varint(), r.varint()
	if flags&entClosedBy != 0 {
		e.closedBy = &store.Producer{ID: r.string(), Epoch: r.varint(), Seq: r.varint()}
	}
	if flags&entLastSeq != 0 {
		e.lastSeq = r.string()
	}
	if flags&entProducer != 0 {
		e.producerID = r.string()
		e.producer.Epoch, e.producer.LastSeq = r.varint(), r.varint()
	}
	if r.err == nil && (e.n < 0 || e.start < 0 || flags > entClosed|entClosedBy|entLastSeq|entProducer) {
		r.err = errBadEntry
	}
	return r.err == nil
}
