// Kafka wire pieces the nemesis client needs, written from the protocol spec (not our Python
// codecs, so a codec bug cannot hide itself): Produce v7 (acks=-1) and Fetch v11 as a consumer
// (ReplicaId -1) on __cluster_metadata-0, and RecordBatch v2 (magic 2, CRC-32C) with one
// value-only record per batch. Both versions are non-flexible: request header v1, response
// header v0.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"
)

const topic = "__cluster_metadata"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type enc struct{ b []byte }

func (e *enc) i8(v int8)   { e.b = append(e.b, byte(v)) }
func (e *enc) i16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) i32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) str(s string) {
	e.i16(int16(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) varint(v int64) { e.b = binary.AppendVarint(e.b, v) }

// recordBatch is one RecordBatch v2 holding one record with a null key, `value`, no headers.
func recordBatch(value []byte, nowMs int64) []byte {
	var rec enc
	rec.i8(0)      // attributes
	rec.varint(0)  // timestamp delta
	rec.varint(0)  // offset delta
	rec.varint(-1) // key: null
	rec.varint(int64(len(value)))
	rec.b = append(rec.b, value...)
	rec.varint(0) // headers
	var body enc  // from attributes on: what the CRC covers
	body.i16(0)   // attributes
	body.i32(0)   // last offset delta
	body.i64(nowMs)
	body.i64(nowMs)
	body.i64(-1) // producer id
	body.i16(-1) // producer epoch
	body.i32(-1) // base sequence
	body.i32(1)  // records
	body.varint(int64(len(rec.b)))
	body.b = append(body.b, rec.b...)
	var out enc
	out.i64(0)                              // base offset
	out.i32(int32(4 + 1 + 4 + len(body.b))) // batch length: from the leader epoch on
	out.i32(-1)                             // partition leader epoch
	out.i8(2)                               // magic
	out.b = binary.BigEndian.AppendUint32(out.b, crc32.Checksum(body.b, castagnoli))
	out.b = append(out.b, body.b...)
	return out.b
}

func header(apiKey, version int16, cid int32) *enc {
	e := &enc{b: make([]byte, 4, 256)} // the size, patched in frame()
	e.i16(apiKey)
	e.i16(version)
	e.i32(cid)
	e.str("nemesis")
	return e
}

func (e *enc) frame() []byte {
	binary.BigEndian.PutUint32(e.b[:4], uint32(len(e.b)-4))
	return e.b
}

func produceRequest(cid int32, value []byte, timeoutMs int32) []byte {
	e := header(0, 7, cid)
	e.i16(-1) // transactional id: null
	e.i16(-1) // acks
	e.i32(timeoutMs)
	e.i32(1)
	e.str(topic)
	e.i32(1)
	e.i32(0) // partition
	batch := recordBatch(value, time.Now().UnixMilli())
	e.i32(int32(len(batch)))
	e.b = append(e.b, batch...)
	return e.frame()
}

func fetchRequest(cid int32, offset int64) []byte {
	e := header(1, 11, cid)
	e.i32(-1) // replica id: a consumer
	e.i32(0)  // max wait
	e.i32(1)  // min bytes
	e.i32(1 << 20)
	e.i8(0)   // isolation: read uncommitted (the node serves committed data only anyway)
	e.i32(0)  // session id
	e.i32(-1) // session epoch: no session
	e.i32(1)
	e.str(topic)
	e.i32(1)
	e.i32(0)  // partition
	e.i32(-1) // current leader epoch: unknown
	e.i64(offset)
	e.i64(-1) // log start offset
	e.i32(1 << 20)
	e.i32(0)  // forgotten topics
	e.str("") // rack
	return e.frame()
}

type dec struct {
	b   []byte
	pos int
	err error
}

func (d *dec) need(n int) bool {
	if d.err == nil && d.pos+n > len(d.b) {
		d.err = errors.New("short response")
	}
	return d.err == nil
}
func (d *dec) i8() int8 {
	if !d.need(1) {
		return 0
	}
	d.pos++
	return int8(d.b[d.pos-1])
}
func (d *dec) i16() int16 {
	if !d.need(2) {
		return 0
	}
	d.pos += 2
	return int16(binary.BigEndian.Uint16(d.b[d.pos-2:]))
}
func (d *dec) i32() int32 {
	if !d.need(4) {
		return 0
	}
	d.pos += 4
	return int32(binary.BigEndian.Uint32(d.b[d.pos-4:]))
}
func (d *dec) i64() int64 {
	if !d.need(8) {
		return 0
	}
	d.pos += 8
	return int64(binary.BigEndian.Uint64(d.b[d.pos-8:]))
}
func (d *dec) bytes(n int) []byte {
	if n < 0 || !d.need(n) {
		return nil
	}
	d.pos += n
	return d.b[d.pos-n : d.pos]
}
func (d *dec) str() string { return string(d.bytes(int(d.i16()))) }
func (d *dec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.pos += n
	return v
}

// roundTrip sends one frame and reads the answer's body after the correlation id.
func roundTrip(conn net.Conn, frame []byte, cid int32, deadline time.Time) (*dec, error) {
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 16<<20 || n < 4 {
		return nil, fmt.Errorf("bad response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	d := &dec{b: body}
	if got := d.i32(); got != cid {
		return nil, fmt.Errorf("correlation id %d, sent %d", got, cid)
	}
	return d, nil
}

// produceAnswer: the error code and base offset of the one partition's answer.
func produceAnswer(d *dec) (int16, int64, error) {
	if d.i32() != 1 {
		return 0, 0, errors.New("expected one topic")
	}
	d.str()
	if d.i32() != 1 {
		return 0, 0, errors.New("expected one partition")
	}
	d.i32()
	code := d.i16()
	base := d.i64()
	return code, base, d.err
}

// Record is one data record read back: its offset and value.
type Record struct {
	Offset int64  `json:"o"`
	Value  string `json:"v"`
}

// fetchAnswer: error code, high watermark, the data records (control batches skipped) and
// the end offset of the last whole batch returned (-1 if none).
func fetchAnswer(d *dec) (int16, int64, []Record, int64, error) {
	d.i32() // throttle
	if top := d.i16(); top != 0 {
		return top, -1, nil, -1, d.err
	}
	d.i32() // session id
	if d.i32() != 1 {
		return 0, 0, nil, -1, errors.New("expected one topic")
	}
	d.str()
	if d.i32() != 1 {
		return 0, 0, nil, -1, errors.New("expected one partition")
	}
	d.i32()
	code := d.i16()
	hw := d.i64()
	d.i64() // last stable offset
	d.i64() // log start offset
	if n := d.i32(); n > 0 {
		d.bytes(16 * int(n)) // aborted transactions
	}
	d.i32() // preferred read replica
	size := d.i32()
	var records []byte
	if size > 0 {
		records = d.bytes(int(size))
	}
	if d.err != nil {
		return 0, 0, nil, -1, d.err
	}
	recs, end, err := parseBatches(records)
	return code, hw, recs, end, err
}

func parseBatches(b []byte) ([]Record, int64, error) {
	var out []Record
	end := int64(-1)
	for len(b) >= 12 {
		base := int64(binary.BigEndian.Uint64(b))
		length := int(binary.BigEndian.Uint32(b[8:]))
		if 12+length > len(b) {
			break // a partial batch at the end (never sent by our node; tolerated by Kafka's)
		}
		batch := b[:12+length]
		b = b[12+length:]
		if len(batch) < 61 || batch[16] != 2 {
			return nil, -1, errors.New("not a RecordBatch v2")
		}
		if crc32.Checksum(batch[21:], castagnoli) != binary.BigEndian.Uint32(batch[17:]) {
			return nil, -1, fmt.Errorf("bad CRC in the batch at offset %d", base)
		}
		attrs := binary.BigEndian.Uint16(batch[21:])
		lastDelta := int64(int32(binary.BigEndian.Uint32(batch[23:])))
		end = base + lastDelta + 1
		if attrs&0x20 != 0 {
			continue // control batch (LeaderChange, voters, ...)
		}
		d := &dec{b: batch, pos: 57}
		n := int(d.i32())
		for i := 0; i < n && d.err == nil; i++ {
			d.varint() // length
			d.i8()
			d.varint()
			delta := d.varint()
			if kl := d.varint(); kl > 0 {
				d.bytes(int(kl))
			}
			v := d.bytes(int(d.varint()))
			for h := d.varint(); h > 0 && d.err == nil; h-- {
				d.bytes(int(d.varint()))
				d.bytes(int(d.varint()))
			}
			out = append(out, Record{Offset: base + delta, Value: string(v)})
		}
		if d.err != nil {
			return nil, -1, d.err
		}
	}
	return out, end, nil
}
