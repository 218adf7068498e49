package rmq

import (
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Server-side load balancing of 4.x clients (RocketMQ 5's
// QueryAssignmentProcessor), JSON bodies both:
//
//	400 QUERY_ASSIGNMENT  body {"topic","consumerGroup","clientId",
//	    "strategyName":"AVG"|"AVG_BY_CIRCLE","messageModel":"CLUSTERING"|"BROADCASTING"}
//	    answer {"messageQueueAssignments":[{"messageQueue":{queue},"mode":"PULL"|"POP"}]}
//	    (messageQueueAssignments null: no valid answer, the client keeps what it has)
//	401 SET_MESSAGE_REQUEST_MODE  body {"topic","consumerGroup",
//	    "mode":"PULL"|"POP","popShareQueueNum":n}

// MaxAssignmentBodyBytes bounds the bodies of 400 and 401.
const MaxAssignmentBodyBytes = 64 << 10

// Message request modes (Java's MessageRequestMode).
const (
	RequestModePull = "PULL"
	RequestModePop  = "POP"
)

// QueryAssignmentRequest is the body of 400.
type QueryAssignmentRequest struct {
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	StrategyName  string `json:"strategyName"`
	MessageModel  string `json:"messageModel"`
}

// MessageQueueAssignment is one queue of a 400 answer.
type MessageQueueAssignment struct {
	MessageQueue MessageQueue      `json:"messageQueue"`
	Mode         string            `json:"mode"`
	Attachments  map[string]string `json:"attachments,omitempty"`
}

// QueryAssignmentResponse is the answer body of 400; a nil
// MessageQueueAssignments is written as null (RocketMQ's "skip").
type QueryAssignmentResponse struct {
	MessageQueueAssignments []MessageQueueAssignment `json:"messageQueueAssignments"`
}

// SetMessageRequestModeRequest is the body of 401. A missing mode is
// PULL, Java's default.
type SetMessageRequestModeRequest struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int32  `json:"popShareQueueNum"`
}

func boundBody(body []byte, name string) error {
	switch {
	case len(body) == 0:
		return &BodyError{Body: name, Problem: "the request has no " + name + " JSON body"}
	case len(body) > MaxAssignmentBodyBytes:
		return &BodyError{Body: name, Problem: fmt.Sprintf("the body is %d bytes, more than the limit of %d", len(body), MaxAssignmentBodyBytes)}
	}
	return nil
}

// DecodeQueryAssignment reads the body of 400: topic, consumerGroup and
// clientId are required, messageModel is CLUSTERING or BROADCASTING
// (missing: CLUSTERING).
func DecodeQueryAssignment(body []byte) (QueryAssignmentRequest, error) {
	const name = "QueryAssignmentRequestBody"
	var r QueryAssignmentRequest
	if err := boundBody(body, name); err != nil {
		return r, err
	}
	if err := decodeJSON(body, name, &r); err != nil {
		return QueryAssignmentRequest{}, err
	}
	switch {
	case r.Topic == "":
		return r, &BodyError{Body: name, Problem: "topic is missing"}
	case r.ConsumerGroup == "":
		return r, &BodyError{Body: name, Problem: "consumerGroup is missing"}
	case r.ClientID == "":
		return r, &BodyError{Body: name, Problem: "clientId is missing"}
	}
	switch r.MessageModel {
	case "":
		r.MessageModel = "CLUSTERING"
	case "CLUSTERING", "BROADCASTING":
	default:
		return r, &BodyError{Body: name, Problem: fmt.Sprintf("messageModel %.32q is neither CLUSTERING nor BROADCASTING", r.MessageModel)}
	}
	return r, nil
}

// EncodeQueryAssignment is a 400 request.
func EncodeQueryAssignment(r QueryAssignmentRequest) *remoting.Command {
	return remoting.NewRequest(CodeQueryAssignment, nil, mustJSON(r))
}

// EncodeQueryAssignmentResponse writes the answer body of 400.
func EncodeQueryAssignmentResponse(r QueryAssignmentResponse) []byte { return mustJSON(r) }

// DecodeQueryAssignmentResponse reads the answer body of 400.
func DecodeQueryAssignmentResponse(body []byte) (QueryAssignmentResponse, error) {
	var r QueryAssignmentResponse
	err := decodeJSON(body, "QueryAssignmentResponseBody", &r)
	return r, err
}

// DecodeSetMessageRequestMode reads the body of 401: topic and
// consumerGroup are required, mode PULL or POP, popShareQueueNum not
// negative.
func DecodeSetMessageRequestMode(body []byte) (SetMessageRequestModeRequest, error) {
	const name = "SetMessageRequestModeRequestBody"
	var r SetMessageRequestModeRequest
	if err := boundBody(body, name); err != nil {
		return r, err
	}
	if err := decodeJSON(body, name, &r); err != nil {
		return SetMessageRequestModeRequest{}, err
	}
	switch {
	case r.Topic == "":
		return r, &BodyError{Body: name, Problem: "topic is missing"}
	case r.ConsumerGroup == "":
		return r, &BodyError{Body: name, Problem: "consumerGroup is missing"}
	case r.PopShareQueueNum < 0:
		return r, &BodyError{Body: name, Problem: "popShareQueueNum is negative"}
	}
	switch r.Mode {
	case "":
		r.Mode = RequestModePull
	case RequestModePull, RequestModePop:
	default:
		return r, &BodyError{Body: name, Problem: fmt.Sprintf("mode %.32q is neither PULL nor POP", r.Mode)}
	}
	return r, nil
}

// EncodeSetMessageRequestMode is a 401 request.
func EncodeSetMessageRequestMode(r SetMessageRequestModeRequest) *remoting.Command {
	return remoting.NewRequest(CodeSetMessageRequestMode, nil, mustJSON(r))
}
