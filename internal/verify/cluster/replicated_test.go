package cluster

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/verify/proxy"
)

// TestStartReplicatedGroups starts groups=2,replicas=2 with two name
// servers: a master and a slave per group, each slave replicating through
// a fault-proxy link to its master. Start returns once every slave is in
// sync; Close tears every process down by PID.
func TestStartReplicatedGroups(t *testing.T) {
	if buildErr != nil {
		t.Fatalf("cannot build petrel: %v", buildErr)
	}
	pn := proxy.NewNet(testLogger(t))
	defer pn.Close()
	var links, nsLinks []string
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Start(ctx, Replicated(2, 2, 2), Options{Bin: petrelBin, Dir: dir, Logger: testLogger(t),
		HALink: func(from, to string) (string, error) {
			l, err := pn.Link(from, to)
			if err != nil {
				return "", err
			}
			links = append(links, l.Name())
			return l.Addr(), nil
		},
		NamesrvLink: func(from, to string) (string, error) {
			l, err := pn.Link(from, to)
			if err != nil {
				return "", err
			}
			nsLinks = append(nsLinks, l.Name())
			return l.Addr(), nil
		}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				b, _ := os.ReadFile(p.Log)
				t.Logf("log of %s:\n%s", p.Name, b)
			}
		}
		if !closed {
			_ = c.Close()
		}
	})

	ps := c.Processes()
	var names []string
	byName := map[string]*Process{}
	for _, p := range ps {
		names = append(names, p.Name+"/"+p.Role)
		byName[p.Name] = p
	}
	want := []string{"namesrv-0/namesrv", "namesrv-1/namesrv", "broker-a-0/master", "broker-a-1/slave", "broker-b-0/master", "broker-b-1/slave"}
	if !slices.Equal(names, want) {
		t.Fatalf("processes %v, want %v", names, want)
	}
	if ns := c.NameServers(); len(ns) != 2 || ns[0] != byName["namesrv-0"].Namesrv || ns[1] != byName["namesrv-1"].Namesrv {
		t.Errorf("name servers %v", ns)
	}
	seen := map[string]string{}
	for _, p := range ps {
		if p.DataDir != filepath.Join(dir, p.Name) {
			t.Errorf("%s: data dir %s", p.Name, p.DataDir)
		}
		for _, a := range []string{p.Namesrv, p.Remoting, p.GRPC, p.HTTP, p.HA} {
			if a == "" {
				continue
			}
			if host, _, err := net.SplitHostPort(a); err != nil || host != "127.0.0.1" {
				t.Errorf("%s: address %q is not 127.0.0.1:port", p.Name, a)
			}
			if other, dup := seen[a]; dup {
				t.Errorf("address %s of %s is also %s's", a, p.Name, other)
			}
			seen[a] = p.Name
		}
		switch p.Role {
		case RoleNamesrv:
			if p.Namesrv == "" || p.Remoting != "" || p.HTTP != "" || p.Group != "" {
				t.Errorf("name server %+v", p)
			}
		case RoleMaster, RoleSlave:
			if p.Namesrv != "" || p.Remoting == "" || p.GRPC == "" || p.HTTP == "" || !strings.HasPrefix(p.Name, p.Group+"-") {
				t.Errorf("broker %+v", p)
			}
			if code, err := readyz(p, readyzTimeout*5); err != nil || code != http.StatusOK {
				t.Errorf("%s /readyz: %d %v", p.Name, code, err)
			}
		}
	}
	for _, g := range []string{"broker-a", "broker-b"} {
		m, s := byName[g+"-0"], byName[g+"-1"]
		if m.BrokerID != 0 || s.BrokerID != 1 || m.HA == "" || s.HA != "" || m.HAMaster != "" {
			t.Errorf("group %s: master %+v, slave %+v", g, m, s)
		}
		l, err := pn.Link(s.Name, m.HA)
		if err != nil {
			t.Fatal(err)
		}
		if s.HAMaster != l.Addr() {
			t.Errorf("%s replicates from %s, want the proxy link %s (%s)", s.Name, s.HAMaster, l.Addr(), l.Name())
		}
		if st := l.Stats(); st.Conns == 0 || st.UpBytes == 0 {
			t.Errorf("link %s accepted no connection; stats %+v", l.Name(), st)
		}
	}
	if len(links) != 2 {
		t.Errorf("HALink called for %v, want the 2 slaves", links)
	}
	// Every broker registers with every name server through a link of its
	// own, and those links carried its registrations.
	if len(nsLinks) != 8 {
		t.Errorf("NamesrvLink called for %v, want the 4 brokers × 2 name servers", nsLinks)
	}
	for _, p := range ps {
		if p.Role != RoleMaster && p.Role != RoleSlave {
			continue
		}
		var want []string
		for _, ns := range c.NameServers() {
			l, err := pn.Link(p.Name, ns)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, l.Addr())
			if st := l.Stats(); st.Conns == 0 || st.UpBytes == 0 || st.DownBytes == 0 {
				t.Errorf("name server link %s carried no registration; stats %+v", l.Name(), st)
			}
		}
		if got := strings.Join(want, ";"); p.NameServers != got {
			t.Errorf("%s registers with %q, want the proxy links %q", p.Name, p.NameServers, got)
		}
	}
	// Every broker is in the name servers' cluster info, with both
	// replicas of each group.
	for _, ns := range c.NameServers() {
		out := petrelCLI(t, "cluster", "list", "--namesrv", ns)
		for _, p := range ps {
			if p.Remoting != "" && !strings.Contains(out, p.Remoting) {
				t.Errorf("name server %s does not list %s (%s):\n%s", ns, p.Name, p.Remoting, out)
			}
		}
	}

	// Kill the slave of broker-a: its master reports it out of sync
	// sooner or later; restarted, it catches up again.
	if err := c.Kill("broker-a-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "broker-a-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReplicated(ctx, "broker-a"); err != nil {
		t.Fatal(err)
	}

	pids := map[string]int{}
	for _, p := range ps {
		pids[p.Name] = c.PID(p.Name)
		if pids[p.Name] <= 0 {
			t.Errorf("%s has no pid", p.Name)
		}
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for name, pid := range pids {
		if !gone(pid) {
			t.Errorf("%s (pid %d) still runs after Close", name, pid)
		}
	}
	if ex := c.Exits(); len(ex) != 0 {
		t.Errorf("exits nobody asked for: %v", ex)
	}
}
