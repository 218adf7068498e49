package grpcfront

// RecallMessage (RocketMQ 5.3+): a producer recalls a delayed message
// before it is due, by the recall_handle of its SendResultEntry
// (broker.SendResult.RecallHandle; the entry carries it as field 5, which
// the generated v5.1.2 code lacks: pbcodec.SetRecallHandle). The method is
// not in the generated service either: serviceDesc is the generated one
// plus RecallMessage, whose messages pbcodec encodes by hand.
//
// The answer's status is OK with message_id (the UNIQ_KEY), or the
// broker's refusal (broker.Recall): TOPIC_NOT_FOUND, BAD_REQUEST for a
// handle that does not decode or fit (another topic or broker, a time
// passed or too far), NOT_FOUND when no such message is pending. A
// slave's front forwards the recall to its master as RECALL_MESSAGE.

import (
	"context"
	"fmt"
	"slices"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// RecallMessageMethod is RecallMessage's full gRPC method name.
const RecallMessageMethod = "/apache.rocketmq.v2.MessagingService/RecallMessage"

// serviceDesc is the MessagingService the front serves: the generated
// methods and RecallMessage.
var serviceDesc = func() grpc.ServiceDesc {
	d := v2.MessagingService_ServiceDesc
	d.Methods = append(slices.Clone(d.Methods), grpc.MethodDesc{MethodName: "RecallMessage", Handler: recallMessageHandler})
	return d
}()

// ServiceDesc returns the service the front registers (tests count its
// methods).
func ServiceDesc() grpc.ServiceDesc { return serviceDesc }

func recallMessageHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(pbcodec.RecallMessageRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	s := srv.(*Server)
	if interceptor == nil {
		return s.RecallMessage(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: RecallMessageMethod}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return s.RecallMessage(ctx, req.(*pbcodec.RecallMessageRequest))
	})
}

// RecallMessage recalls a delayed message by its recall handle.
func (s *Server) RecallMessage(ctx context.Context, req *pbcodec.RecallMessageRequest) (*pbcodec.RecallMessageResponse, error) {
	topic, st := checkTopic(req.GetTopic())
	if st != nil {
		return &pbcodec.RecallMessageResponse{Status: st}, nil
	}
	if req.RecallHandle == "" {
		return &pbcodec.RecallMessageResponse{Status: status(v2.Code_BAD_REQUEST, "the request has no recall handle; pass the recall_handle of the delayed message's send receipt")}, nil
	}
	var id string
	var err error
	if s.forwarding() {
		id, err = s.fwd.Recall(topic, req.RecallHandle)
	} else {
		id, err = s.b.Recall(ctx, topic, req.RecallHandle)
	}
	if err != nil {
		return &pbcodec.RecallMessageResponse{Status: s.brokerStatus(err, "recall")}, nil
	}
	return &pbcodec.RecallMessageResponse{Status: okStatus(), MessageId: id}, nil
}

// Recall forwards a recall to the master as RECALL_MESSAGE.
func (f *forwarder) Recall(topic, handle string) (string, error) {
	resp, err := f.call("recalls of delayed messages", rmq.EncodeRecallRequest(rmq.RecallRequest{Topic: topic, RecallHandle: handle}))
	if err != nil {
		return "", err
	}
	if resp.Code != rmq.RespSuccess {
		if resp.Code == rmq.RespIllegalOperation {
			return "", &broker.Error{Kind: broker.KindIllegalOperation, Msg: resp.Remark, Err: fmt.Errorf("grpcfront: master answered code %d", resp.Code)}
		}
		if resp.Code == rmq.RespQueryNotFound {
			return "", &broker.Error{Kind: broker.KindQueryNotFound, Msg: resp.Remark, Err: fmt.Errorf("grpcfront: master answered code %d", resp.Code)}
		}
		return "", refusal(resp, false)
	}
	r, err := rmq.DecodeRecallResponse(resp)
	if err != nil {
		return "", f.badAnswer(fmt.Errorf("recall: %w", err))
	}
	return r.MsgID, nil
}
