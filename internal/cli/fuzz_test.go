package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// FuzzDecodeMQMap: any input decodes or fails without panicking, and what
// decodes re-encodes (in fastjson's form) to text that decodes the same.
func FuzzDecodeMQMap(f *testing.F) {
	for _, s := range []string{
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":1}}}`,
		`{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":2},7]]}`,
		`{"offsetTable":{}}`,
		`{"offsetTable":{{"topic":"a\"}:"}:"x\\"},{"topic":"b"}:[1,{"y":2}]}}`,
		`{"offsetTable":{{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeMQMap(b, "offsetTable")
		if err != nil {
			return
		}
		var sb strings.Builder
		sb.WriteString(`{"offsetTable":{`)
		for i, e := range got {
			if i > 0 {
				sb.WriteByte(',')
			}
			k, _ := json.Marshal(e)
			fmt.Fprintf(&sb, "%s:%s", k, e.value)
		}
		sb.WriteString("}}")
		again, err := decodeMQMap([]byte(sb.String()), "offsetTable")
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", sb.String(), err)
		}
		if len(again) != len(got) {
			t.Fatalf("re-decoded %d entries, want %d", len(again), len(got))
		}
		for i := range got {
			if again[i].Topic != got[i].Topic || again[i].QueueID != got[i].QueueID || again[i].BrokerName != got[i].BrokerName {
				t.Fatalf("entry %d: %+v, want %+v", i, again[i], got[i])
			}
		}
	})
}
