package interop

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// httpAddr is the address of the server's HTTP listener, from its startup
// line.
func httpAddr(t *testing.T, p *petrel) string {
	t.Helper()
	m := regexp.MustCompile(`http listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no HTTP listener line in the startup output:\n%s", p.stdout.String())
	}
	return m[1]
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestMetricsCountWhatTheOfficialClientSendsAndConsumes: after the 4.x Go
// client sent and consumed 100 messages, the topic's put and get counters
// in /metrics of the real process grew by 100, and /readyz says ready.
func TestMetricsCountWhatTheOfficialClientSendsAndConsumes(t *testing.T) {
	t.Parallel()
	p := startPetrel(t, serverOptions{})
	base := "http://" + httpAddr(t, p)
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz of a started server: %d %q", code, body)
	}
	prod := newProducer(t, p)
	topic := uniqueName(t, "t")
	prepareTopic(t, p, prod, topic) // may send probe messages of its own
	counter := func(text, name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + `\{topic="` + regexp.QuoteMeta(topic) + `"\} (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			return 0
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	_, text := httpGet(t, base+"/metrics")
	put0 := counter(text, "petrel_put_messages_total")
	want := bodies(t, "m", 100)
	sendAllSync(t, prod, topic, want, nil)
	drain(t, p, topic, want)

	waitFor(t, consumeTimeout, "put counter up by 100 and get counter by at least 100", func() (bool, string) {
		code, text := httpGet(t, base+"/metrics")
		put, got := counter(text, "petrel_put_messages_total")-put0, counter(text, "petrel_get_messages_total")
		return code == 200 && put == 100 && got >= 100, "put +" + strconv.FormatFloat(put, 'f', -1, 64) + ", get " + strconv.FormatFloat(got, 'f', -1, 64)
	})
	// The consumer commits what it consumed with its next pulls or its
	// periodic offset update: the group's lag on the topic falls to 0.
	lagRE := regexp.MustCompile(`(?m)^petrel_consumer_lag_messages\{[^}]*topic="` + regexp.QuoteMeta(topic) + `"[^}]*\} (\S+)$`)
	waitFor(t, consumeTimeout, "the group's lag on the topic at 0", func() (bool, string) {
		_, text := httpGet(t, base+"/metrics")
		samples := lagRE.FindAllStringSubmatch(text, -1)
		for _, s := range samples {
			if s[1] != "0" {
				return false, "lag " + s[1]
			}
		}
		return len(samples) > 0, strconv.Itoa(len(samples)) + " lag samples"
	})
	_, text = httpGet(t, base+"/metrics")
	for _, series := range []string{"petrel_send_duration_seconds_count", "petrel_commitlog_flush_duration_seconds_count",
		"petrel_connections", "petrel_disk_free_bytes"} {
		if !regexp.MustCompile(`(?m)^` + series + `(\{[^}]*\})? [0-9.e+]+$`).MatchString(text) {
			t.Errorf("no %s sample in /metrics", series)
		}
	}
}
