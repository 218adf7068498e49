package brokerfront

// Server-side load balancing of 4.x clients (bodies in rmq/assign.go):
// 400 QUERY_ASSIGNMENT answers the requesting member's share of the
// topic's queues under the group's mode (broker.QueryAssignment) over
// the topic's whole route — every broker's readable queues as the name
// servers list them, as RocketMQ's QueryAssignmentProcessor assigns
// (TopicRouteInfoManager) — so a member that asks one broker gets its
// queues on all of them. A route is read from the name servers at most
// every routeCacheTTL per topic; when none answers the last one read
// serves, and without one the answer is null (the member keeps what it
// has), as RocketMQ's; a topic the name servers do not know is null too.
// Without name servers (Options.TopicRoute nil) the route is this
// broker's queues. 401 SET_MESSAGE_REQUEST_MODE stores the mode of a
// topic and group (broker.SetMessageRequestMode, durable with the
// group's config).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Bounds of the route cache of 400.
const (
	// routeCacheTTL is how long a route read from the name servers
	// serves before it is read again.
	routeCacheTTL = 5 * time.Second
	// routeCacheMax bounds the topics whose routes are kept.
	routeCacheMax = 1024
	// routeReadTimeout bounds one read of a route from a name server.
	routeReadTimeout = 3 * time.Second
)

// ErrNoRoute is returned by a TopicRoute function when the name servers
// know no route of the topic.
var ErrNoRoute = errors.New("brokerfront: no route of the topic on the name servers")

// NameServerRoutes returns an Options.TopicRoute that reads a topic's
// route (GET_ROUTEINFO_BY_TOPIC, 105) from the name servers with cl, one
// after another until one answers, and lists its readable queues.
func NameServerRoutes(cl *remoting.Client, nameServers []string) func(ctx context.Context, topic string) ([]broker.RouteQueue, error) {
	addrs := append([]string(nil), nameServers...)
	return func(ctx context.Context, topic string) ([]broker.RouteQueue, error) {
		var last error = errors.New("brokerfront: no name server configured")
		for _, ns := range addrs {
			rctx, cancel := context.WithTimeout(ctx, routeReadTimeout)
			resp, err := cl.Invoke(rctx, ns, rmq.EncodeRouteRequest(rmq.RouteRequest{Topic: topic}))
			cancel()
			switch {
			case err != nil:
				last = fmt.Errorf("read the route of %q from name server %s: %w", topic, ns, err)
				continue
			case resp.Code == rmq.RespTopicNotExist:
				return nil, ErrNoRoute
			case resp.Code != rmq.RespSuccess:
				last = fmt.Errorf("brokerfront: name server %s answered the route of %q with code %d: %s", ns, topic, resp.Code, resp.Remark)
				continue
			}
			rd, err := rmq.DecodeTopicRouteDataBody(resp.Body)
			if err != nil {
				last = fmt.Errorf("read the route of %q from name server %s: %w", topic, ns, err)
				continue
			}
			out := []broker.RouteQueue{}
			for _, qd := range rd.QueueDatas {
				if qd.Perm&broker.PermRead == 0 {
					continue
				}
				for i := range max(qd.ReadQueueNums, 0) {
					out = append(out, broker.RouteQueue{BrokerName: qd.BrokerName, QueueID: i})
				}
			}
			return out, nil
		}
		return nil, last
	}
}

// routeCache keeps the routes 400 read, by topic.
type routeCache struct {
	read func(ctx context.Context, topic string) ([]broker.RouteQueue, error) // nil: this broker's queues

	mu     sync.Mutex
	routes map[string]cachedRoute
}

type cachedRoute struct {
	queues []broker.RouteQueue
	at     time.Time
}

// route returns the topic's route queues, ok false when there is none to
// assign over (the caller answers null).
func (c *routeCache) route(ctx context.Context, f *Front, topic string) ([]broker.RouteQueue, bool) {
	now := f.b.Config().Clock.Now()
	c.mu.Lock()
	cur, have := c.routes[topic]
	c.mu.Unlock()
	if have && now.Sub(cur.at) < routeCacheTTL {
		return cur.queues, true
	}
	qs, err := c.read(ctx, topic)
	switch {
	case errors.Is(err, ErrNoRoute):
		c.mu.Lock()
		delete(c.routes, topic)
		c.mu.Unlock()
		return nil, false
	case err != nil:
		f.log.Warn("reading a topic's route from the name servers failed; assigning over the last route read", "topic", topic, "have_route", have, "err", err)
		return cur.queues, have
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.routes) >= routeCacheMax {
		for t, r := range c.routes {
			if now.Sub(r.at) >= routeCacheTTL {
				delete(c.routes, t)
			}
		}
	}
	if _, ok := c.routes[topic]; ok || len(c.routes) < routeCacheMax {
		c.routes[topic] = cachedRoute{queues: qs, at: now}
	}
	return qs, true
}

func (f *Front) registerAssign(s *remoting.Server) {
	s.Handle(rmq.CodeQueryAssignment, f.queryAssignment)
	s.Handle(rmq.CodeSetMessageRequestMode, f.setMessageRequestMode)
}

func (f *Front) queryAssignment(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := rmq.DecodeQueryAssignment(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	ar := broker.AssignmentRequest{Topic: r.Topic, Group: r.ConsumerGroup, ClientID: r.ClientID,
		Strategy: r.StrategyName, Broadcasting: r.MessageModel == "BROADCASTING"}
	var out rmq.QueryAssignmentResponse
	routed := true
	if f.routes.read != nil {
		ar.Route, routed = f.routes.route(ctx, f, r.Topic)
	}
	a := broker.Assignment{}
	if routed {
		a = f.b.QueryAssignment(ar)
	}
	if a.Valid {
		out.MessageQueueAssignments = make([]rmq.MessageQueueAssignment, 0, len(a.Queues))
		for _, q := range a.Queues {
			out.MessageQueueAssignments = append(out.MessageQueueAssignments, rmq.MessageQueueAssignment{
				MessageQueue: rmq.MessageQueue{Topic: r.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}, Mode: a.Mode.Mode})
		}
	} else {
		f.log.Debug("no assignment", "topic", r.Topic, "group", r.ConsumerGroup, "client_id", r.ClientID, "strategy", r.StrategyName, "routed", routed)
	}
	return bodyResponse(req, rmq.EncodeQueryAssignmentResponse(out), nil)
}

func (f *Front) setMessageRequestMode(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := rmq.DecodeSetMessageRequestMode(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespSystemError, err.Error())
	}
	err = f.b.SetMessageRequestMode(r.Topic, r.ConsumerGroup, broker.RequestMode{Mode: r.Mode, PopShareQueueNum: r.PopShareQueueNum})
	if err != nil {
		return f.errorResponse(req, err) // KindGroupNotExist: SUBSCRIPTION_GROUP_NOT_EXIST (26), as RocketMQ
	}
	f.log.Debug("message request mode set", "topic", r.Topic, "group", r.ConsumerGroup, "mode", r.Mode, "remote", c.RemoteAddr().String())
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
