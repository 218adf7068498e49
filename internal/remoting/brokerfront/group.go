package brokerfront

// Subscription-group administration, as mqadmin updateSubGroup /
// deleteSubGroup and the dashboard send it (RocketMQ 5):
//
//	200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP  body: SubscriptionGroupConfig JSON
//	201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG     answer: SubscriptionGroupWrapper JSON
//	207 DELETE_SUBSCRIPTIONGROUP             ext groupName, cleanOffset ("true"/"false")
//
// SubscriptionGroupConfig (every field optional; a missing one has Java's
// default, given here, since the request replaces the whole config):
//
//	{"groupName":"g", "consumeEnable":true, "consumeFromMinEnable":true,
//	 "consumeBroadcastEnable":true, "consumeMessageOrderly":false,
//	 "retryQueueNums":1, "retryMaxTimes":16,
//	 "groupRetryPolicy":{"type":"CUSTOMIZED"|"EXPONENTIAL",
//	    "exponentialRetryPolicy":{"initial":ms,"max":ms,"multiplier":n},
//	    "customizedRetryPolicy":{"next":[ms,...]}},
//	 "brokerId":0, "whichBrokerWhenConsumeSlowly":1,
//	 "notifyConsumerIdsChangedEnable":true, "groupSysFlag":0,
//	 "consumeTimeoutMinute":15,
//	 "subscriptionDataSet":[{"topic":"t","expressionType":"TAG","expression":"*","version":0}],
//	 "attributes":{"+key":"value","-key":""}}
//
// Attributes are changes to the group's current ones, as RocketMQ's
// AttributeUtil: "+k" sets, "-k" removes; a bare "k" also sets (what a
// config read with 201 holds). The answer of 200 and 207 is SUCCESS (0)
// with no body, INVALID_PARAMETER (29) naming the bad field, or the
// broker's error. 207 of a group without a config is SUCCESS, as in
// RocketMQ.
//
// SubscriptionGroupWrapper: {"subscriptionGroupTable":{"g":{config},...},
// "forbiddenTable":{}, "dataVersion":{"timestamp":ms,"counter":n}}.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store/meta"
)

const (

	// maxGroupConfigBytes bounds the body of 200: a config within the
	// broker's limits (broker.MaxGroupAttributes etc.) fits easily.
	maxGroupConfigBytes = 1 << 20
)

// errGroupConfig is wrapped by decodeGroupConfig's errors; the text after
// it names the field and is fit for the client.
var errGroupConfig = errors.New("invalid subscription group config")

// decodeGroupConfig decodes a SubscriptionGroupConfig body over Java's
// defaults and checks it (broker.CheckGroup). The attributes are returned
// as sent (RocketMQ's +key/-key changes); the caller applies them to the
// group's current ones. Errors wrap errGroupConfig and name the field.
func decodeGroupConfig(body []byte) (g meta.Group, attrChanges map[string]string, err error) {
	if len(body) == 0 {
		return meta.Group{}, nil, fmt.Errorf("%w: the request has no SubscriptionGroupConfig JSON body", errGroupConfig)
	}
	if len(body) > maxGroupConfigBytes {
		return meta.Group{}, nil, fmt.Errorf("%w: the body is %d bytes, more than the limit of %d", errGroupConfig, len(body), maxGroupConfigBytes)
	}
	g = broker.DefaultGroup("")
	if err := json.Unmarshal(body, &g); err != nil {
		return meta.Group{}, nil, fmt.Errorf("%w: %s", errGroupConfig, jsonProblem(err))
	}
	attrChanges, g.Attributes = g.Attributes, nil
	if len(attrChanges) > broker.MaxGroupAttributes {
		return meta.Group{}, nil, fmt.Errorf("%w: %d attribute changes, more than the limit of %d", errGroupConfig, len(attrChanges), broker.MaxGroupAttributes)
	}
	check := g
	check.Attributes = attrChanges
	if err := broker.CheckGroup(check); err != nil {
		var be *broker.Error
		errors.As(err, &be)
		return meta.Group{}, nil, fmt.Errorf("%w: %s", errGroupConfig, be.Msg)
	}
	return g, attrChanges, nil
}

// jsonProblem says what is wrong with a body in words fit for a client:
// the field and the type it needs, or where the syntax broke.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must be a JSON %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("the body is not valid JSON (at byte %d)", se.Offset)
	}
	return "the body is not a SubscriptionGroupConfig JSON object"
}

func jsonKind(k string) string {
	switch k {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "slice":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number in range"
}

func (f *Front) updateGroup(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	g, changes, err := decodeGroupConfig(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	cur, _ := f.b.Group(g.Name)
	attrs, err := broker.GroupAttributes(cur.Attributes, changes)
	if err != nil {
		return f.groupErrorResponse(req, g.Name, err)
	}
	g.Attributes = attrs
	if err := f.b.UpdateGroup(g); err != nil {
		return f.groupErrorResponse(req, g.Name, err)
	}
	f.log.Debug("subscription group config set by an admin request", "group", g.Name, "remote", c.RemoteAddr().String())
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// decodeDeleteGroup reads the header of 207: groupName (required) and
// cleanOffset ("true" or "false"; absent is false). Errors wrap
// errGroupConfig and name the field.
func decodeDeleteGroup(ext map[string]string) (name string, cleanOffset bool, err error) {
	name = ext["groupName"]
	if name == "" {
		return "", false, fmt.Errorf("%w: the header has no groupName", errGroupConfig)
	}
	switch v := ext["cleanOffset"]; v {
	case "", "false":
	case "true":
		cleanOffset = true
	default:
		return "", false, fmt.Errorf("%w: cleanOffset %.16q is neither true nor false", errGroupConfig, v)
	}
	return name, cleanOffset, nil
}

// encodeGroupTable is the answer body of 201.
func encodeGroupTable(groups []meta.Group, v meta.DataVersion) ([]byte, error) {
	table := make(map[string]meta.Group, len(groups))
	for _, g := range groups {
		table[g.Name] = g
	}
	return json.Marshal(struct {
		SubscriptionGroupTable map[string]meta.Group `json:"subscriptionGroupTable"`
		// ForbiddenTable: RocketMQ's per-topic consume bans; Petrel has none.
		ForbiddenTable map[string]map[string]int `json:"forbiddenTable"`
		DataVersion    meta.DataVersion          `json:"dataVersion"`
	}{table, map[string]map[string]int{}, v})
}

func (f *Front) allGroups(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, err := encodeGroupTable(f.b.Groups(), f.b.GroupsVersion())
	if err != nil {
		f.log.Error("encoding the subscription group table failed", "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, "the subscription group table could not be encoded; see the broker log")
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = body
	return resp
}

func (f *Front) deleteGroup(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	name, clean, err := decodeDeleteGroup(req.ExtFields)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	if err := f.b.DeleteGroup(name, clean); err != nil {
		return f.groupErrorResponse(req, name, err)
	}
	f.log.Debug("subscription group deleted by an admin request", "group", name, "clean_offset", clean, "remote", c.RemoteAddr().String())
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

// groupErrorResponse answers a broker error of 200 or 207: a bad config as
// INVALID_PARAMETER, as RocketMQ's admin processor does, anything else by
// its kind. The remark is the broker's sentence; the cause goes to the log.
func (f *Front) groupErrorResponse(req *remoting.Command, group string, err error) *remoting.Command {
	var be *broker.Error
	if !errors.As(err, &be) {
		f.log.Error("subscription group change failed", "group", group, "err", err)
		return remoting.NewResponse(req, rmq.RespSystemError, "the subscription group change failed; see the broker log")
	}
	code, ok := kindCodes[be.Kind]
	switch {
	case be.Kind == broker.KindMessageIllegal:
		code = rmq.RespInvalidParameter
	case !ok:
		code = rmq.RespSystemError
	}
	if be.Err != nil {
		f.log.Warn("subscription group change failed", "group", group, "err", be.Err)
	}
	return remoting.NewResponse(req, code, be.Msg)
}
