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
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// errGroupConfig is wrapped by decodeGroupConfig's errors; the text after
// it names the field and is fit for the client.
var errGroupConfig = errors.New("invalid subscription group config")

// decodeGroupConfig decodes a SubscriptionGroupConfig body over Java's
// defaults (rmq.DecodeSubscriptionGroupBody) and checks it
// (broker.CheckGroup). The attributes are returned as sent (RocketMQ's
// +key/-key changes); the caller applies them to the group's current
// ones. Errors wrap errGroupConfig and name the field.
func decodeGroupConfig(body []byte) (g broker.GroupConfig, attrChanges map[string]string, err error) {
	w, err := rmq.DecodeSubscriptionGroupBody(body)
	if err != nil {
		var be *rmq.BodyError
		errors.As(err, &be)
		return broker.GroupConfig{}, nil, fmt.Errorf("%w: %s", errGroupConfig, be.Problem)
	}
	g = groupFromWire(w)
	attrChanges, g.Attributes = g.Attributes, nil
	if len(attrChanges) > broker.MaxGroupAttributes {
		return broker.GroupConfig{}, nil, fmt.Errorf("%w: %d attribute changes, more than the limit of %d", errGroupConfig, len(attrChanges), broker.MaxGroupAttributes)
	}
	check := g
	check.Attributes = attrChanges
	if err := broker.CheckGroup(check); err != nil {
		var be *broker.Error
		errors.As(err, &be)
		return broker.GroupConfig{}, nil, fmt.Errorf("%w: %s", errGroupConfig, be.Msg)
	}
	return g, attrChanges, nil
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

func (f *Front) allGroups(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	groups := f.b.Groups()
	table := make(map[string]rmq.SubscriptionGroupConfig, len(groups))
	for _, g := range groups {
		table[g.Name] = groupWire(g)
	}
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = rmq.EncodeSubscriptionGroupTableBody(rmq.SubscriptionGroupTable{SubscriptionGroupTable: table, DataVersion: versionWire(f.b.GroupsVersion())})
	return resp
}

func (f *Front) deleteGroup(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeDeleteSubscriptionGroup(req)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, fmt.Sprintf("%s: %s", errGroupConfig, err))
	}
	name, clean := h.GroupName, h.CleanOffset
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
