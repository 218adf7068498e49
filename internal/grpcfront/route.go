package grpcfront

// QueryRoute and QueryAssignment: the queues of a topic, all on this
// broker, all readable and writable, at this process's gRPC endpoint.
//
// A slave's front lists them alike, as its group's queues (broker id 0):
// with Config.Master it forwards what only the master does (receives,
// acks, sends, transaction ends; forward.go, sendfwd.go), so a client can
// use every queue through this endpoint, as RocketMQ's proxy lists the
// master's queues at its own endpoint. Without Config.Master a slave's
// queues are READ only (its broker refuses writes).

import (
	"context"
	"net"
	"strconv"
	"strings"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

// storedName is the broker's name of a resource: "namespace%name", or the
// name alone without a namespace (the Java proxy's rule).
func storedName(r *v2.Resource) string {
	if ns := r.GetResourceNamespace(); ns != "" {
		return ns + "%" + r.GetName()
	}
	return r.GetName()
}

// resourceOf turns a stored name back into a resource of namespace ns.
func resourceOf(stored, ns string) *v2.Resource {
	if ns != "" {
		if name, ok := strings.CutPrefix(stored, ns+"%"); ok {
			return &v2.Resource{ResourceNamespace: ns, Name: name}
		}
	}
	return &v2.Resource{Name: stored}
}

// checkTopic validates a request's topic resource and returns its stored
// name, or the status to answer.
func checkTopic(r *v2.Resource) (string, *v2.Status) {
	if r.GetName() == "" {
		return "", status(v2.Code_ILLEGAL_TOPIC, "the request names no topic; set the topic")
	}
	name := storedName(r)
	switch {
	case len(name) > message.MaxTopicLen:
		return "", status(v2.Code_ILLEGAL_TOPIC, "topic name %q is %d characters, longer than the limit of %d; use a shorter name", name, len(name), message.MaxTopicLen)
	case !message.ValidTopic(name):
		return "", status(v2.Code_ILLEGAL_TOPIC, "topic name %q contains illegal characters; a topic name must match ^[%%|a-zA-Z0-9_-]+$", name)
	}
	return name, nil
}

// checkGroup validates a consumer group resource.
func checkGroup(r *v2.Resource) (string, *v2.Status) {
	if r.GetName() == "" {
		return "", status(v2.Code_ILLEGAL_CONSUMER_GROUP, "the request names no consumer group; set the group")
	}
	name := storedName(r)
	if len(name) > 255 || !message.ValidTopic(name) {
		return "", status(v2.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q must be 1..255 characters of [%%|a-zA-Z0-9_-]", name)
	}
	return name, nil
}

// noRouteText is the message of RocketMQ's proxy for the route of an
// unknown topic (its MQClientException of TOPIC_NOT_EXIST, 17, with the FAQ
// link), which clients show.
const noRouteText = "CODE: 17  DESC: No topic route info in name server for the topic: %s\nFor more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ"

// existingTopic returns the topic's config, or TOPIC_NOT_FOUND with
// RocketMQ's text: a route or assignment query never creates a topic, as
// RocketMQ's proxy (sends still auto-create: the broker's rule).
func (s *Server) existingTopic(name string) (broker.TopicConfig, *v2.Status) {
	if t, ok := s.b.Topic(name); ok {
		return t, nil
	}
	return broker.TopicConfig{}, status(v2.Code_TOPIC_NOT_FOUND, noRouteText, name)
}

// queueCount is how many queues a route lists.
func queueCount(t broker.TopicConfig) int32 { return max(t.ReadQueueNums, t.WriteQueueNums, 1) }

// acceptTypes are the message types a topic accepts (the broker's rule,
// which sends are checked against).
func acceptTypes(t broker.TopicConfig) []v2.MessageType {
	types := broker.AcceptedTypes(t)
	out := make([]v2.MessageType, len(types))
	for i, typ := range types {
		out[i] = grpcType[typ]
	}
	return out
}

// grpcType is the gRPC name of each broker message type.
var grpcType = map[broker.MessageType]v2.MessageType{
	broker.MessageTypeNormal: v2.MessageType_NORMAL, broker.MessageTypeFIFO: v2.MessageType_FIFO,
	broker.MessageTypeDelay: v2.MessageType_DELAY, broker.MessageTypeTransaction: v2.MessageType_TRANSACTION,
}

// endpoints is where clients reach this front: Config.Advertise, else
// the endpoints the client used, else the listener's address.
func (s *Server) endpoints(asked *v2.Endpoints) *v2.Endpoints {
	if s.cfg.Advertise != "" {
		if e := parseEndpoint(s.cfg.Advertise); e != nil {
			return e
		}
	}
	if len(asked.GetAddresses()) > 0 && asked.GetAddresses()[0].GetHost() != "" {
		return asked
	}
	if a, ok := s.listenAddr().(*net.TCPAddr); ok {
		ip := a.IP
		if ip == nil || ip.IsUnspecified() {
			ip = net.IPv4(127, 0, 0, 1)
		}
		return parseEndpoint(net.JoinHostPort(ip.String(), strconv.Itoa(a.Port)))
	}
	return parseEndpoint("127.0.0.1:8081")
}

// parseEndpoint turns "host:port" into Endpoints, or nil.
func parseEndpoint(hostPort string) *v2.Endpoints {
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil
	}
	scheme := v2.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = v2.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = v2.AddressScheme_IPv6
		}
	}
	return &v2.Endpoints{Scheme: scheme, Addresses: []*v2.Address{{Host: host, Port: int32(port)}}}
}

// queue is one route entry.
func (s *Server) queue(topic *v2.Resource, id int32, t broker.TopicConfig, ep *v2.Endpoints) *v2.MessageQueue {
	perm := v2.Permission_READ_WRITE
	if (s.fwd == nil && s.b.Role() == broker.RoleSlave) || s.b.Permission()&broker.PermWrite == 0 {
		// A slave that cannot forward, or a drained broker
		// (brokerPermission 4, which refuses sends).
		perm = v2.Permission_READ
	}
	return &v2.MessageQueue{
		Topic:              &v2.Resource{ResourceNamespace: topic.GetResourceNamespace(), Name: topic.GetName()},
		Id:                 id,
		Permission:         perm,
		Broker:             &v2.Broker{Name: s.b.Config().BrokerName, Id: 0, Endpoints: ep},
		AcceptMessageTypes: acceptTypes(t),
	}
}

// QueryRoute lists the topic's queues 0..n-1, in order, at this front's
// endpoint. An unknown topic is TOPIC_NOT_FOUND, also when the broker
// auto-creates topics (RocketMQ's proxy never creates one here; a
// producer started for it fails as with RocketMQ).
func (s *Server) QueryRoute(ctx context.Context, req *v2.QueryRouteRequest) (*v2.QueryRouteResponse, error) {
	name, st := checkTopic(req.GetTopic())
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	t, st := s.existingTopic(name)
	if st != nil {
		return &v2.QueryRouteResponse{Status: st}, nil
	}
	ep := s.endpoints(req.GetEndpoints())
	n := queueCount(t)
	qs := make([]*v2.MessageQueue, n)
	for i := range n {
		qs[i] = s.queue(req.GetTopic(), i, t, ep)
	}
	return &v2.QueryRouteResponse{Status: okStatus(), MessageQueues: qs}, nil
}

// QueryAssignment answers push consumers (not in the Go client v5.1.2):
// a FIFO group gets every queue, others one assignment for the whole
// broker (queue id -1), as the Java proxy does.
func (s *Server) QueryAssignment(ctx context.Context, req *v2.QueryAssignmentRequest) (*v2.QueryAssignmentResponse, error) {
	name, st := checkTopic(req.GetTopic())
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	group, st := checkGroup(req.GetGroup())
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	t, st := s.existingTopic(name)
	if st != nil {
		return &v2.QueryAssignmentResponse{Status: st}, nil
	}
	if t.Perm&broker.PermRead == 0 {
		return &v2.QueryAssignmentResponse{Status: status(v2.Code_FORBIDDEN, "topic %q is not readable on broker %s (perm %d)", name, s.b.Config().BrokerName, t.Perm)}, nil
	}
	ep := s.endpoints(req.GetEndpoints())
	var as []*v2.Assignment
	if fifo, _ := s.groupPolicy(group); fifo {
		for i := range queueCount(t) {
			as = append(as, &v2.Assignment{MessageQueue: s.queue(req.GetTopic(), i, t, ep)})
		}
	} else {
		as = []*v2.Assignment{{MessageQueue: s.queue(req.GetTopic(), -1, t, ep)}}
	}
	return &v2.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}
