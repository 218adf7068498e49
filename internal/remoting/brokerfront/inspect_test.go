package brokerfront

import (
	"maps"
	"testing"
)

func TestApplyAttributes(t *testing.T) {
	got, err := applyAttributes(map[string]string{"a": "1", "b": "2"}, "+persistent=false,-a,+b=3")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"b": "3", "persistent": "false"}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := applyAttributes(map[string]string{"a": "1"}, "-a"); err != nil || got != nil {
		t.Fatalf("removing the last attribute: %v %v", got, err)
	}
	for _, bad := range []string{"a=1", "+=1", "-", "-a=1", "+a"} {
		if _, err := applyAttributes(nil, bad); err == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}

func TestMQMapBodyIsFastjsonShaped(t *testing.T) {
	var m mqMap
	m.add(mqKey("T", "b", 0), 5)
	m.add(mqKey("T", "b", 1), struct {
		X int `json:"x"`
	}{7})
	body, err := mqMapBody(&m, map[string]any{"consumeTps": 0})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:{"x":7}},"consumeTps":0}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	empty, _ := mqMapBody(&mqMap{}, nil)
	if string(empty) != `{"offsetTable":{}}` {
		t.Fatalf("empty: %s", empty)
	}
}

func TestHumanBytesLikeJava(t *testing.T) {
	for n, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 10 << 30: "10.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Fatalf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
