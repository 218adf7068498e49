package txn

import (
	"net/netip"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
)

// FuzzHalfRecord feeds arbitrary properties (as a client could send them)
// through the half rewrite and every parser of half records: nothing may
// panic, and what End would store is a valid record without the
// bookkeeping properties.
func FuzzHalfRecord(f *testing.F) {
	f.Add("orders", int32(1), props(PropertyProducerGroup, "pg", PropertyTransactionPrepared, "true"), []byte("b"))
	f.Add("t", int32(0), props(PropertyCheckImmunitySeconds, "99999999999999999999", PropertyCheckTimes, "-3",
		PropertyPreparedQueueOffset, "7", PropertyNextCheck, "x", PropertyProducerGroup, ""), []byte{})
	f.Add("t", int32(-5), "REAL_TOPIC\x01a b\x02REAL_QID\x01-1\x02", []byte("17,x,-2"))
	f.Fuzz(func(t *testing.T, topic string, qid int32, properties string, body []byte) {
		if len(properties) > 0 && properties[len(properties)-1] != message.PropertySeparator {
			properties += string(message.PropertySeparator)
		}
		m := &message.Message{Topic: topic, QueueID: qid, SysFlag: message.SysFlagTxPrepared, Body: body,
			Properties: properties, BornHost: netip.MustParseAddrPort("10.0.0.1:1"),
			StoreHost: netip.MustParseAddrPort("10.0.0.2:2"), QueueOffset: 9, PhysicalOffset: 1234}
		if !message.ValidTopic(topic) || len(topic) == 0 || len(topic) > message.MaxTopicLen {
			return
		}
		toHalf(m)
		if m.Validate() != nil {
			return
		}
		rec := message.Record(m.Encode())
		h := parseHalf(rec, 6000)
		if h.qo != 9 || h.clo != 1234 || h.origin > h.qo || h.checks < 0 {
			t.Fatalf("parseHalf = %+v", h)
		}
		opOffsets(body, func(v int64) {
			if v < 0 {
				t.Fatalf("negative op offset %d", v)
			}
		})
		if c, err := committed(rec); err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("committed message invalid: %v", err)
			}
			for _, k := range internalProps {
				if _, ok := message.PropertyOf(c.Properties, k); ok {
					t.Fatalf("committed message keeps %s", k)
				}
			}
			if c.SysFlag&message.SysFlagTxMask != message.SysFlagTxCommit || c.PreparedTransactionOffset != 1234 {
				t.Fatalf("committed sysFlag %#x prepared offset %d", c.SysFlag, c.PreparedTransactionOffset)
			}
			if h.bad != "" && h.group != "" {
				t.Fatalf("committed a half parseHalf calls bad: %s", h.bad)
			}
		}
		if cp, err := renewed(rec, h.origin, h.checks+1, 42); err == nil {
			h2 := parseHalf(message.Record(cp.Encode()), 6000)
			if h2.due != 42 || h2.checks != h.checks+1 || h2.group != h.group {
				t.Fatalf("copy parses as %+v, want due 42, checks %d, group %q", h2, h.checks+1, h.group)
			}
		}
		if hdr, b, err := CheckRequest(rec); err == nil {
			if hdr.CommitLogOffset != 1234 || hdr.TranStateTableOffset != 9 {
				t.Fatalf("check header %+v", hdr)
			}
			if _, _, err := message.Decode(b); err != nil {
				t.Fatalf("check body does not decode: %v", err)
			}
		}
	})
}
