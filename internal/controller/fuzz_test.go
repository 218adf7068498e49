package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/fsm"
	"github.com/petrelmq/petrel/internal/remoting"
)

var fuzzCodes = []int16{api.CodeRegister, api.CodeHeartbeat, api.CodeAlterISR, api.CodeGroups, api.CodeElect, api.CodeTransfer, api.CodeResign}

// FuzzHandlers: any body for any code gets an answer with one of the
// api's codes (a success body is JSON), never a panic, and the state
// keeps its invariants.
func FuzzHandlers(f *testing.F) {
	f.Add(uint8(0), []byte(`{"cluster":"c","group":"g","replicaId":0,"addr":"a","haAddr":"h"}`))
	f.Add(uint8(1), []byte(`{"group":"g","replicaId":1,"incarnation":1,"master":true,"epoch":1}`))
	f.Add(uint8(2), []byte(`{"group":"g","master":1,"epoch":1,"isrVersion":1,"isr":[1,2],"incarnations":{"1":1,"2":2}}`))
	f.Add(uint8(3), []byte(`{}`))
	f.Add(uint8(4), []byte(`{"group":"g","replicaId":2,"unclean":true}`))
	f.Add(uint8(5), []byte(`{"group":"g","replicaId":2}`))
	f.Add(uint8(6), []byte(`{"group":"g","replicaId":1,"incarnation":1,"epoch":1,"target":2,"leo":5}`))
	f.Add(uint8(2), []byte(`{"group":"g","isr":[`))
	f.Fuzz(func(t *testing.T, code uint8, body []byte) {
		r := newRig(t, nil)
		r.start()
		r.register(0, 0, 0)
		r.register(0, 0, 0)
		c := fuzzCodes[int(code)%len(fuzzCodes)]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		resp := r.h[c](ctx, nil, remoting.NewRequest(c, nil, body))
		switch resp.Code {
		case remoting.CodeSuccess:
			if !json.Valid(resp.Body) {
				t.Fatalf("code %d: success with a body that is not JSON: %q", c, resp.Body)
			}
		case api.CodeStale, api.CodeRefused, api.CodeNotLeader, remoting.CodeSystemError:
		default:
			t.Fatalf("code %d: answer code %d (%s)", c, resp.Code, resp.Remark)
		}
		r.log.Read(func(st *fsm.State) {
			if err := st.Check(); err != nil {
				t.Fatalf("code %d body %q: %v", c, body, err)
			}
		})
	})
}
