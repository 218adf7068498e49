package broker

// Subscription expressions and the tag filter a pull applies.

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/petrelmq/petrel/internal/broker/sqlfilter"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
)

// Expression types of a subscription.
const (
	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
)

// filterSpec is a parsed subscription.
type filterSpec struct {
	expr, typ string
	all       bool            // "*" or "": no tag filter
	codes     []int64         // tag hashes, sorted, deduplicated
	sql       *sqlfilter.Expr // SQL92: evaluated on each record's properties
	err       *Error          // set when the expression does not parse
}

// parseSubscription parses a subscription expression.
//
// TAG: "*" or "" matches every message; otherwise tags separated by "||",
// each trimmed of spaces, matched exactly through their tag hashes
// (message.TagHash, the function the store uses for consume-queue
// entries). The client's codeSet is never used: the Go client hashes UTF-8
// bytes where Java hashes UTF-16 units. Hash collisions only over-deliver;
// clients re-filter by tag string.
//
// SQL92: RocketMQ's property filter (package sqlfilter), evaluated at the
// broker on each record's properties (TAGS is the tag); clients do not
// re-filter, so only matching messages reach them. An expression that does
// not compile is refused with KindSubscriptionParseFailed and the position
// of the error.
func parseSubscription(expr, typ string) *filterSpec {
	f := &filterSpec{expr: expr, typ: typ}
	switch strings.ToUpper(typ) {
	case "", ExpressionTag:
		f.typ = ExpressionTag
	case ExpressionSQL92:
		f.typ = ExpressionSQL92
		f.all = true
		sql, err := sqlfilter.Compile(expr)
		if err != nil {
			f.err = errorf(KindSubscriptionParseFailed, err, "SQL92 expression %q does not parse: %v", expr, err)
			return f
		}
		f.sql = sql
		return f
	default:
		f.err = errorf(KindSubscriptionParseFailed, nil, "expression type %q is not supported; use TAG or SQL92", typ)
		return f
	}
	e := strings.TrimSpace(expr)
	if e == "" || e == "*" {
		f.all = true
		return f
	}
	for tag := range strings.SplitSeq(e, "||") {
		if tag = strings.TrimSpace(tag); tag != "" {
			f.codes = append(f.codes, message.TagHash(tag))
		}
	}
	if len(f.codes) == 0 {
		f.err = errorf(KindSubscriptionParseFailed, nil, "tag expression %q names no tag; use \"*\" or tags separated by \"||\"", expr)
		return f
	}
	slices.Sort(f.codes)
	f.codes = slices.Compact(f.codes)
	return f
}

// tagFilter returns the store filter; nil matches everything.
func (f *filterSpec) tagFilter() store.TagFilter {
	if f.all {
		return nil
	}
	codes := f.codes
	if len(codes) == 1 {
		c := codes[0]
		return func(h int64) bool { return h == c }
	}
	if len(codes) <= 8 {
		return func(h int64) bool { return slices.Contains(codes, h) }
	}
	return func(h int64) bool { _, ok := slices.BinarySearch(codes, h); return ok }
}

// recordFilter returns the store's record filter; nil matches everything.
func (f *filterSpec) recordFilter() store.RecordFilter {
	if f.sql == nil {
		return nil
	}
	sql := f.sql
	return func(r message.Record) bool {
		return sql.Match(func(key string) (string, bool) {
			v, ok := r.Property(key)
			if !ok || len(v) == 0 {
				return "", ok
			}
			// The evaluator only reads the value during Match; the record
			// outlives the call.
			return unsafe.String(&v[0], len(v)), true
		})
	}
}

// filterFor resolves the subscription of a pull. With sysFlag bit 2 the
// request's own subscription is used — unless the group registered an
// SQL92 subscription for the topic by heartbeat, which wins, because the
// Go pull consumer sends SQL text with expressionType TAG. Without bit 2
// the heartbeat-registered subscription is used.
func (b *Broker) filterFor(req *PullRequest) (*filterSpec, error) {
	registered, groupKnown := b.clients.subscription(req.Group, req.Topic)
	if req.SysFlag&PullFlagSubscription != 0 {
		if registered != nil && registered.typ == ExpressionSQL92 {
			return registered, nil
		}
		f := parseSubscription(req.Subscription, req.ExpressionType)
		if f.err != nil {
			return nil, f.err
		}
		return f, nil
	}
	if registered == nil {
		if !groupKnown {
			return nil, errorf(KindSubscriptionNotExist, nil, "consumer group %q has no live client on broker %s; send a heartbeat with its subscriptions before pulling", req.Group, b.cfg.BrokerName)
		}
		return nil, errorf(KindSubscriptionNotExist, nil, "consumer group %q has not subscribed to topic %q on broker %s; subscribe and send a heartbeat before pulling", req.Group, req.Topic, b.cfg.BrokerName)
	}
	if registered.err != nil {
		return nil, registered.err
	}
	return registered, nil
}
