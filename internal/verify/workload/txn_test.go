package workload

import (
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// TestTxnWorkloadCommitsArriveRollbacksNeverAndChecksAreAnswered runs the
// txn workload against a live broker that checks transactions back after
// 500 ms: committed halves (by END or by check-back) are delivered and
// drained, rolled-back ones never, and every acked check_* half had its
// check-back answered with its intent.
func TestTxnWorkloadCommitsArriveRollbacksNeverAndChecksAreAnswered(t *testing.T) {
	env := liveBroker(t, txnName)
	env.Rate = 40
	ops := runBriefly(t, txnName, env, 1500*time.Millisecond, func(w Workload) {
		tw := w.(*txnWorkload)
		tw.settleAfter, tw.quiet = 2*time.Second, 1500*time.Millisecond
	})
	sends := checkSends(t, ops)
	delivered, drained := map[string]int{}, map[string]int{}
	checks := map[string]string{}
	ends := map[string][]history.Type{}
	for _, op := range ops {
		switch op.F {
		case history.Deliver:
			if s := sends[op.ID]; s == nil || s.invoke.Sum != op.Sum || op.Corrupt || op.Topic != env.Topic(txnName) {
				t.Errorf("bad delivery %+v", op)
			}
			delivered[op.ID]++
		case history.Drain:
			drained[op.ID]++
		case history.CheckTxn:
			checks[op.ID] = op.Txn
		case history.EndTxn:
			ends[op.ID] = append(ends[op.ID], op.Type)
		}
	}
	count := map[string]int{}
	for id, s := range sends {
		intent := s.invoke.Txn
		if _, ok := acked(s); !ok {
			continue
		}
		count[intent]++
		switch intent {
		case history.Commit, history.CheckCommit:
			if delivered[id] == 0 || drained[id] != 1 {
				t.Errorf("committed %s (%s) delivered %d, drained %d times", id, intent, delivered[id], drained[id])
			}
		case history.Rollback, history.CheckRollback:
			if delivered[id] != 0 || drained[id] != 0 {
				t.Errorf("rolled back %s (%s) delivered %d, drained %d times", id, intent, delivered[id], drained[id])
			}
		default:
			t.Errorf("%s has intent %q", id, intent)
		}
		switch intent {
		case history.Commit, history.Rollback:
			if len(ends[id]) != 2 || ends[id][0] != history.Invoke || ends[id][1] != history.OK {
				t.Errorf("%s (%s) has end lines %v", id, intent, ends[id])
			}
		case history.CheckCommit:
			if checks[id] != history.Commit || len(ends[id]) != 0 {
				t.Errorf("%s (check_commit): check answered %q, end lines %v", id, checks[id], ends[id])
			}
		case history.CheckRollback:
			if checks[id] != history.Rollback || len(ends[id]) != 0 {
				t.Errorf("%s (check_rollback): check answered %q, end lines %v", id, checks[id], ends[id])
			}
		}
	}
	for _, in := range txnIntents {
		if count[in] < 3 {
			t.Errorf("only %d acked sends with intent %s (%v)", count[in], in, count)
		}
	}
	t.Logf("acked by intent %v; %d check-backs answered", count, len(checks))
}
