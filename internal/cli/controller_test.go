package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
)

// fakeController is a Controller whose groups the test sets; Transfer
// hands over after handOverAfter more Groups calls.
type fakeController struct {
	mu            sync.Mutex
	resp          api.GroupsResponse
	elected       []api.ElectRequest
	transfers     []api.TransferRequest
	handOverAfter int // Groups calls after a Transfer until the epoch moves; <0: never
	pending       int64
	err           error
}

func (f *fakeController) Groups(_ context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if f.pending != 0 {
		if f.handOverAfter == 0 {
			g := &f.resp.Groups[0]
			g.Master, g.Epoch, g.TransferTo = f.pending, g.Epoch+1, 0
			f.pending = 0
		} else if f.handOverAfter > 0 {
			f.handOverAfter--
		}
	}
	out := f.resp
	out.Groups = nil
	for _, g := range f.resp.Groups {
		if req.Group == "" || g.Group == req.Group {
			out.Groups = append(out.Groups, g)
		}
	}
	return &out, nil
}

func (f *fakeController) Elect(_ context.Context, req *api.ElectRequest) (*api.GroupView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elected = append(f.elected, *req)
	g := &f.resp.Groups[0]
	id := req.ReplicaID
	if id == 0 {
		id = 3
	}
	g.Master, g.Epoch = id, g.Epoch+1
	out := *g
	return &out, nil
}

func (f *fakeController) Transfer(_ context.Context, req *api.TransferRequest) (*api.GroupView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.transfers = append(f.transfers, *req)
	g := &f.resp.Groups[0]
	g.TransferTo = req.ReplicaID
	f.pending = req.ReplicaID
	out := *g
	return &out, nil
}

func threeReplicas() api.GroupsResponse {
	return api.GroupsResponse{
		Leader: api.ControllerView{ID: 2, Addr: "127.0.0.1:9882", Leader: true},
		Controllers: []api.ControllerView{
			{ID: 1, Addr: "127.0.0.1:9881"}, {ID: 2, Addr: "127.0.0.1:9882", Leader: true}, {ID: 3, Addr: "127.0.0.1:9883"},
		},
		Groups: []api.GroupView{{
			Cluster: "DefaultCluster", Group: "broker-a", Master: 1, Epoch: 4, ISR: []int64{1, 2, 3}, ISRVersion: 7,
			Replicas: []api.ReplicaView{
				{ID: 1, Addr: "127.0.0.1:10911", Alive: true, LEO: 4096},
				{ID: 2, Addr: "127.0.0.1:10921", Alive: true, LEO: 4096},
				{ID: 3, Addr: "127.0.0.1:10931", Alive: false, LEO: 1024},
			},
		}},
	}
}

func newTestCLI(t *testing.T, output string) (*CLI, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	c, err := New(Config{Output: output, Out: &out, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &out
}

func TestClusterGroupsTable(t *testing.T) {
	c, out := newTestCLI(t, OutputTable)
	f := &fakeController{resp: threeReplicas()}
	if err := c.ClusterGroups(context.Background(), f, ""); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"controller leader: 2 (127.0.0.1:9882); voters: 1@127.0.0.1:9881,2@127.0.0.1:9882,3@127.0.0.1:9883",
		"GROUP", "ISR VERSION", "broker-a", "1 (127.0.0.1:10911)", "{1,2,3}",
		"1 alive 4096, 2 alive 4096, 3 dead 1024",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestClusterGroupsJSONAndUnknownGroup(t *testing.T) {
	c, out := newTestCLI(t, OutputJSON)
	f := &fakeController{resp: threeReplicas()}
	if err := c.ClusterGroups(context.Background(), f, "broker-a"); err != nil {
		t.Fatal(err)
	}
	var got api.GroupsResponse
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Groups) != 1 || got.Groups[0].Epoch != 4 || got.Leader.ID != 2 {
		t.Errorf("JSON = %+v", got)
	}
	err := c.ClusterGroups(context.Background(), f, "broker-z")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown group: err = %v, want ErrNotFound", err)
	}
}

func TestElectMaster(t *testing.T) {
	c, out := newTestCLI(t, OutputTable)
	f := &fakeController{resp: threeReplicas()}
	if err := c.ElectMaster(context.Background(), f, "broker-a", 2, false); err != nil {
		t.Fatal(err)
	}
	if len(f.elected) != 1 || f.elected[0] != (api.ElectRequest{Group: "broker-a", ReplicaID: 2}) {
		t.Errorf("elect requests = %+v", f.elected)
	}
	want := "broker-a: master 2 (127.0.0.1:10921) at epoch 5 (was 1 (127.0.0.1:10911) at epoch 4)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("output %q lacks %q", out, want)
	}
	if err := c.ElectMaster(context.Background(), f, "", 0, false); !errors.Is(err, ErrUsage) {
		t.Errorf("no group: err = %v, want ErrUsage", err)
	}
	if err := c.ElectMaster(context.Background(), f, "broker-a", -1, false); !errors.Is(err, ErrUsage) {
		t.Errorf("negative id: err = %v, want ErrUsage", err)
	}
	if err := c.ElectMaster(context.Background(), f, "broker-a", 0, true); err != nil || !f.elected[1].Unclean {
		t.Errorf("unclean: err = %v, requests %+v", err, f.elected)
	}
}

func TestTransferWaitsForTheNewEpoch(t *testing.T) {
	defer func(p time.Duration) { TransferPoll = p }(TransferPoll)
	TransferPoll = time.Millisecond
	c, out := newTestCLI(t, OutputTable)
	f := &fakeController{resp: threeReplicas(), handOverAfter: 3}
	if err := c.Transfer(context.Background(), f, "broker-a", 2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(f.transfers) != 1 || f.transfers[0].ReplicaID != 2 {
		t.Errorf("transfer requests = %+v", f.transfers)
	}
	if !strings.Contains(out.String(), "master 2 (127.0.0.1:10921) at epoch 5") {
		t.Errorf("output = %q", out)
	}
}

func TestTransferTimesOut(t *testing.T) {
	defer func(p time.Duration) { TransferPoll = p }(TransferPoll)
	TransferPoll = time.Millisecond
	c, _ := newTestCLI(t, OutputTable)
	// A clock that moves a second per reading: the wait ends after a few
	// polls without waiting in real time.
	var mu sync.Mutex
	now := time.Unix(0, 0)
	c.cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	f := &fakeController{resp: threeReplicas(), handOverAfter: -1}
	err := c.Transfer(context.Background(), f, "broker-a", 2, 5*time.Second)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not done within 5s") || !strings.Contains(err.Error(), "has not resigned to replica 2") {
		t.Errorf("err = %v", err)
	}
	offline := threeReplicas()
	offline.Groups[0].Master = 0
	if err := c.Transfer(context.Background(), &fakeController{resp: offline}, "broker-a", 0, time.Second); !errors.Is(err, ErrRefused) {
		t.Errorf("offline group: err = %v, want ErrRefused", err)
	}
}

func TestParseControllers(t *testing.T) {
	got, err := ParseControllers("127.0.0.1:1, 127.0.0.1:2;127.0.0.1:3")
	if err != nil || len(got) != 3 || got[1] != "127.0.0.1:2" {
		t.Errorf("ParseControllers = %v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "host", "host:"} {
		if _, err := ParseControllers(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("ParseControllers(%q) err = %v, want ErrUsage", bad, err)
		}
	}
}

func TestControllerErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
		part string
	}{
		{fmt.Errorf("%w (tried 127.0.0.1:1)", client.ErrNoLeader), ErrUnreachable, "a majority of them runs"},
		{fmt.Errorf("%w: replica 9 is not in the in-sync set", client.ErrRefused), ErrRefused, "not in the in-sync set"},
		{&client.StaleError{Remark: "epoch moved"}, ErrRefused, "epoch moved"},
		{fmt.Errorf("controller client: 127.0.0.1:1: %w", context.DeadlineExceeded), ErrUnreachable, "raise --timeout"},
	} {
		got := controllerErr("elect-master", tc.err)
		if !errors.Is(got, tc.want) || !strings.Contains(got.Error(), tc.part) || !strings.HasPrefix(got.Error(), "elect-master") && !strings.Contains(got.Error(), "elect-master") {
			t.Errorf("controllerErr(%v) = %v; want %v containing %q", tc.err, got, tc.want, tc.part)
		}
	}
	c, _ := newTestCLI(t, OutputTable)
	f := &fakeController{resp: threeReplicas(), err: fmt.Errorf("%w (tried 127.0.0.1:1)", client.ErrNoLeader)}
	if err := c.ClusterGroups(context.Background(), f, ""); !errors.Is(err, ErrUnreachable) {
		t.Errorf("groups with no leader: %v", err)
	}
}
