package interop

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// queryByKey sends QUERY_MESSAGE (code 12) for topic#key to the broker and
// decodes the records of the answer. unique marks a query by UNIQ_KEY.
func queryByKey(brAddr, topic, key string, maxNum int, unique bool) (*remotingCommand, []*primitive.MessageExt, error) {
	ext := map[string]string{
		"topic":          topic,
		"key":            key,
		"maxNum":         strconv.Itoa(maxNum),
		"beginTimestamp": "0",
		"endTimestamp":   strconv.FormatInt(math.MaxInt64, 10),
	}
	if unique {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	resp, err := rawCall(brAddr, reqQueryMessage, ext, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if resp.Code != codeSuccess {
		return resp, nil, nil
	}
	return resp, primitive.DecodeMessage(resp.Body), nil
}

func msgBodies(ms []*primitive.MessageExt) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Body)
	}
	slices.Sort(out)
	return out
}

// TestQueryByKey: QUERY_MESSAGE finds messages by any of their keys and by
// their UNIQ_KEY, honours maxNum, and answers QUERY_NOT_FOUND for an unknown
// key.
func TestQueryByKey(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic)

	common := uniqueName(t, "k")
	keyOf := func(i int) string { return fmt.Sprintf("%s-%d", common, i) }
	want := bodies(t, "m", 50)
	var commonWant []string
	results := sendAllSync(t, prod, topic, want, func(i int, m *primitive.Message) {
		keys := []string{keyOf(i)}
		if i%10 == 0 {
			keys = append(keys, common)
			commonWant = append(commonWant, want[i])
		}
		m.WithKeys(keys)
	})
	slices.Sort(commonWant)

	// A key shared by five messages. The index may be written after the send
	// is acknowledged, so wait for it.
	var got []*primitive.MessageExt
	waitFor(t, 20*time.Second, "query by the shared key "+common+" to return its 5 messages", func() (bool, string) {
		resp, ms, err := queryByKey(p.brAddr, topic, common, 32, false)
		if err != nil {
			return false, err.Error()
		}
		if resp.Code != codeSuccess {
			return false, fmt.Sprintf("code %d remark %q", resp.Code, resp.Remark)
		}
		got = ms
		return len(ms) >= len(commonWant), fmt.Sprintf("%d records: %v", len(ms), msgBodies(ms))
	})
	if b := msgBodies(got); !slices.Equal(b, commonWant) {
		t.Fatalf("query by key %s returned %v, want exactly %v", common, b, commonWant)
	}
	for _, m := range got {
		if m.Topic != topic {
			t.Fatalf("query by key returned a record of topic %q, want %q", m.Topic, topic)
		}
		if !slices.Contains(strings.Fields(m.GetKeys()), common) {
			t.Fatalf("query by key %s returned a record with keys %q", common, m.GetKeys())
		}
	}

	// maxNum caps the answer.
	resp, ms, err := queryByKey(p.brAddr, topic, common, 2, false)
	if err != nil || resp.Code != codeSuccess {
		t.Fatalf("query by key with maxNum 2: %v %+v", err, resp)
	}
	if len(ms) < 1 || len(ms) > 2 {
		t.Fatalf("query by key with maxNum 2 returned %d records", len(ms))
	}

	// A key of one message, not its first key in the KEYS property.
	resp, ms, err = queryByKey(p.brAddr, topic, keyOf(20), 32, false)
	if err != nil || resp.Code != codeSuccess {
		t.Fatalf("query by key %s: %v %+v", keyOf(20), err, resp)
	}
	if b := msgBodies(ms); !slices.Equal(b, []string{want[20]}) {
		t.Fatalf("query by key %s returned %v, want [%s]", keyOf(20), b, want[20])
	}
	for _, k := range []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"} {
		if _, err := strconv.ParseInt(resp.ExtFields[k], 10, 64); err != nil {
			t.Fatalf("query answer ext %s = %q, want an integer", k, resp.ExtFields[k])
		}
	}

	// The UNIQ_KEY the producer reported as MsgID.
	id := results[7].MsgID
	resp, ms, err = queryByKey(p.brAddr, topic, id, 32, true)
	if err != nil || resp.Code != codeSuccess {
		t.Fatalf("query by UNIQ_KEY %s: %v %+v", id, err, resp)
	}
	if b := msgBodies(ms); !slices.Equal(b, []string{want[7]}) {
		t.Fatalf("query by UNIQ_KEY %s returned %v, want [%s]", id, b, want[7])
	}
	if !strings.EqualFold(ms[0].MsgId, id) {
		t.Fatalf("record found by UNIQ_KEY %s has message id %s", id, ms[0].MsgId)
	}

	// An unknown key: QUERY_NOT_FOUND.
	resp, ms, err = queryByKey(p.brAddr, topic, "no-such-key-"+runID, 32, false)
	if err != nil {
		t.Fatalf("query by an unknown key: %v", err)
	}
	if resp.Code != codeQueryNotFound {
		t.Fatalf("query by an unknown key: code %d with %d records, want QUERY_NOT_FOUND (22)", resp.Code, len(ms))
	}
	// A known key under another topic: the index is per topic#key.
	resp, ms, err = queryByKey(p.brAddr, topic+"_other", common, 32, false)
	if err != nil {
		t.Fatalf("query by key under another topic: %v", err)
	}
	if resp.Code == codeSuccess || len(ms) > 0 {
		t.Fatalf("query %s#%s (a key of topic %s) answered code %d with %d records, want no records", topic+"_other", common, topic, resp.Code, len(ms))
	}
}
