package grpcfront

// Authentication and authorization of the 5.x clients (Config.Auth).
//
// Every call carries the client's signature in its metadata
// ("authorization", signed over "x-mq-date-time"); the Checker finds the
// user. What the call then needs is RocketMQ's
// (DefaultAuthorizationContextBuilder for gRPC):
//
//	SendMessage                 Pub on each message's topic
//	EndTransaction              Pub on the topic
//	RecallMessage               Pub on the topic
//	QueryRoute                  Pub, Sub or Get on the topic
//	QueryAssignment             Sub on the group and on the topic
//	ReceiveMessage, AckMessage, ChangeInvisibleDuration,
//	ForwardMessageToDeadLetterQueue
//	                            Sub on the group and on the topic
//	Heartbeat                   consumers: Sub on the group; others nothing
//	NotifyClientTermination     Sub on the group when it names one
//	Telemetry Settings          publishing: Pub on each topic;
//	                            subscription: Sub on the group and each topic
//
// A resource is named as the broker stores it ("namespace%name" when the
// client has a namespace), as the 4.x clients name it, so a policy covers
// the same topic over both protocols. A retry topic %RETRY%G is the group
// G (Sub), as in RocketMQ.
//
// A refusal is answered in-band, as RocketMQ's proxy does: the call's
// response with status UNAUTHORIZED (40100, not authenticated) or
// FORBIDDEN (40300, not permitted) and the Checker's sentence for the
// client. The official clients show it as "CODE: UNAUTHORIZED, MESSAGE:
// ..."; a gRPC-level error would instead be reported by the Go client as
// a transport failure (and Unavailable makes it drop the connection).
//
// Without Config.Auth none of this runs: no interceptor is installed and
// the handlers test one nil pointer, so the "authorization" header every
// official client sends (also with empty credentials) is ignored.

import (
	"context"
	"strings"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
)

// Headers of the signature.
const (
	headerAuthorization = "authorization"
	headerDateTime      = "x-mq-date-time"
)

// retryPrefix names a group's retry topic (%RETRY%GROUP).
const retryPrefix = "%RETRY%"

// authProtocol is the protocol the Checker's refusal hook is told.
const authProtocol = "grpc"

// authenticate finds the caller's user from the call's metadata; method
// names the call in the Checker's refusal log.
func (s *Server) authenticate(ctx context.Context, method string) (auth.User, *auth.Refusal) {
	return s.cfg.Auth.AuthenticateGRPCAt(auth.Where{Remote: bornHost(ctx), Method: method},
		header(ctx, headerAuthorization), header(ctx, headerDateTime))
}

// check authenticates the call and authorizes reqs; it returns the
// refusing status, or nil when the call may go on.
func (s *Server) check(ctx context.Context, method string, reqs []auth.Request) *v2.Status {
	peer := bornHost(ctx)
	w := auth.Where{Remote: peer, Method: method}
	u, ref := s.cfg.Auth.AuthenticateGRPCAt(w, header(ctx, headerAuthorization), header(ctx, headerDateTime))
	if ref == nil {
		ref = s.cfg.Auth.AuthorizeAt(w, authProtocol, u, reqs, peer.Addr().Unmap())
	}
	if ref != nil {
		return refusalStatus(ref)
	}
	return nil
}

// refusalStatus is the in-band status of a refusal.
func refusalStatus(ref *auth.Refusal) *v2.Status {
	return &v2.Status{Code: v2.Code(ref.GRPCCode()), Message: ref.Msg}
}

// authUnary is the unary interceptor installed with Config.Auth: it
// checks the call before its handler runs and answers a refusal with the
// call's own response type.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	reqs, refuse := unaryNeeds(req)
	if refuse == nil {
		// A call this table does not know is refused, never let through
		// unchecked (a method added to the service must be added here).
		return nil, grpcstatus.Errorf(codes.PermissionDenied, "%s is not served with authentication on", info.FullMethod)
	}
	if st := s.check(ctx, methodName(info.FullMethod), reqs); st != nil {
		return refuse(st), nil
	}
	return handler(ctx, req)
}

// unaryNeeds returns what a unary request needs and how to answer its
// refusal; refuse is nil for a request type it does not know.
func unaryNeeds(req any) (reqs []auth.Request, refuse func(*v2.Status) any) {
	switch r := req.(type) {
	case *v2.SendMessageRequest:
		return sendNeeds(r), func(st *v2.Status) any { return &v2.SendMessageResponse{Status: st} }
	case *v2.EndTransactionRequest:
		return pubNeeds(nil, r.GetTopic()), func(st *v2.Status) any { return &v2.EndTransactionResponse{Status: st} }
	case *v2.QueryRouteRequest:
		return routeNeeds(r.GetTopic()), func(st *v2.Status) any { return &v2.QueryRouteResponse{Status: st} }
	case *v2.QueryAssignmentRequest:
		return subNeeds(r.GetGroup(), r.GetTopic()), func(st *v2.Status) any { return &v2.QueryAssignmentResponse{Status: st} }
	case *v2.AckMessageRequest:
		return subNeeds(r.GetGroup(), r.GetTopic()), func(st *v2.Status) any { return &v2.AckMessageResponse{Status: st} }
	case *v2.ForwardMessageToDeadLetterQueueRequest:
		return subNeeds(r.GetGroup(), r.GetTopic()),
			func(st *v2.Status) any { return &v2.ForwardMessageToDeadLetterQueueResponse{Status: st} }
	case *v2.ChangeInvisibleDurationRequest:
		// RocketMQ checks the group only; the topic is the one the
		// handle was received from, which needed Sub on it too. The
		// client keeps whatever handle comes back: give it its own.
		return subNeeds(r.GetGroup(), r.GetTopic()), func(st *v2.Status) any {
			return &v2.ChangeInvisibleDurationResponse{Status: st, ReceiptHandle: r.GetReceiptHandle()}
		}
	case *v2.HeartbeatRequest:
		if isConsumer(r.GetClientType()) {
			reqs = groupNeeds(nil, r.GetGroup())
		}
		return reqs, func(st *v2.Status) any { return &v2.HeartbeatResponse{Status: st} }
	case *v2.NotifyClientTerminationRequest:
		return groupNeeds(nil, r.GetGroup()), func(st *v2.Status) any { return &v2.NotifyClientTerminationResponse{Status: st} }
	case *pbcodec.RecallMessageRequest:
		// RocketMQ's RecallMessageRequestHeader: Pub on the topic.
		return pubNeeds(nil, r.GetTopic()), func(st *v2.Status) any { return &pbcodec.RecallMessageResponse{Status: st} }
	}
	return nil, nil
}

// isConsumer reports whether a client type consumes (its heartbeats name
// its group).
func isConsumer(t v2.ClientType) bool {
	switch t {
	case v2.ClientType_PUSH_CONSUMER, v2.ClientType_SIMPLE_CONSUMER:
		return true
	}
	return false
}

// sendNeeds is Pub on every topic of a send's messages (RocketMQ checks
// the first one's; the others could name another topic).
func sendNeeds(r *v2.SendMessageRequest) []auth.Request {
	var reqs []auth.Request
	var last string
	for _, m := range r.GetMessages() {
		if t := m.GetTopic(); t.GetName() != "" {
			if name := storedName(t); name != last {
				last = name
				reqs = pubNeeds(reqs, t)
			}
		}
	}
	return reqs
}

// receiveNeeds is what a receive needs.
func receiveNeeds(r *v2.ReceiveMessageRequest) []auth.Request {
	return subNeeds(r.GetGroup(), r.GetMessageQueue().GetTopic())
}

// checkTelemetry checks a command of a Telemetry stream: every command
// needs the stream's user, Settings also the permissions they name. Nil
// without Config.Auth.
func (s *Server) checkTelemetry(ctx context.Context, cmd *v2.TelemetryCommand) *v2.Status {
	if s.cfg.Auth == nil {
		return nil
	}
	var reqs []auth.Request
	if c, ok := cmd.Command.(*v2.TelemetryCommand_Settings); ok && c.Settings != nil {
		reqs = settingsNeeds(c.Settings)
	}
	return s.check(ctx, "Telemetry", reqs)
}

// methodName is a full gRPC method's last part ("SendMessage").
func methodName(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// settingsNeeds is what a client's Settings need: its publishing topics
// (Pub), or its group and subscribed topics (Sub).
func settingsNeeds(st *v2.Settings) []auth.Request {
	var reqs []auth.Request
	switch ps := st.PubSub.(type) {
	case *v2.Settings_Publishing:
		for _, t := range ps.Publishing.GetTopics() {
			reqs = pubNeeds(reqs, t)
		}
	case *v2.Settings_Subscription:
		reqs = groupNeeds(reqs, ps.Subscription.GetGroup())
		for _, e := range ps.Subscription.GetSubscriptions() {
			reqs = topicNeeds(reqs, e.GetTopic(), subAction, subAction)
		}
	}
	return reqs
}

// Actions of the permissions.
var (
	pubAction   = []auth.Action{auth.ActionPub}
	subAction   = []auth.Action{auth.ActionSub}
	routeAction = []auth.Action{auth.ActionPub, auth.ActionSub, auth.ActionGet}
	// A retry topic's route needs Sub or Get on its group, as RocketMQ's
	// route query of one.
	retryRouteAction = []auth.Action{auth.ActionSub, auth.ActionGet}
)

func pubNeeds(reqs []auth.Request, topic *v2.Resource) []auth.Request {
	return topicNeeds(reqs, topic, pubAction, subAction)
}

func routeNeeds(topic *v2.Resource) []auth.Request {
	return topicNeeds(nil, topic, routeAction, retryRouteAction)
}

func subNeeds(group, topic *v2.Resource) []auth.Request {
	return topicNeeds(groupNeeds(make([]auth.Request, 0, 2), group), topic, subAction, subAction)
}

// topicNeeds adds any one of actions on topic, or of retryActions on its
// group when it is a group's retry topic. An unnamed topic adds nothing:
// the handler refuses the request for it.
func topicNeeds(reqs []auth.Request, topic *v2.Resource, actions, retryActions []auth.Action) []auth.Request {
	if topic.GetName() == "" {
		return reqs
	}
	name := storedName(topic)
	if g, ok := strings.CutPrefix(name, retryPrefix); ok {
		return append(reqs, auth.Request{Resource: groupResource(g), Actions: retryActions})
	}
	return append(reqs, auth.Request{Resource: auth.Resource{Type: auth.ResourceTopic, Name: name, Pattern: auth.Literal}, Actions: actions})
}

// groupNeeds adds Sub on group; an unnamed group adds nothing (the
// handler refuses the request for it, or it names none: a termination).
func groupNeeds(reqs []auth.Request, group *v2.Resource) []auth.Request {
	if group.GetName() == "" {
		return reqs
	}
	return append(reqs, auth.Request{Resource: groupResource(strings.TrimPrefix(storedName(group), retryPrefix)), Actions: subAction})
}

func groupResource(name string) auth.Resource {
	return auth.Resource{Type: auth.ResourceGroup, Name: name, Pattern: auth.Literal}
}
