package rmq

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// overWire sends c through the frame codec in both header serialisations
// (JSON and ROCKETMQ binary) and returns what a peer decodes, so that a
// round trip covers the wire and not just maps.
func overWire(t testing.TB, c *remoting.Command) *remoting.Command {
	t.Helper()
	var out *remoting.Command
	for _, ser := range []byte{remoting.SerializeRocketMQ, remoting.SerializeJSON} {
		c.SerializeType = ser
		b, err := remoting.EncodeFrame(nil, c)
		if err != nil {
			t.Fatalf("encode frame: %v", err)
		}
		got, n, err := remoting.DecodeFrame(b, 0)
		if err != nil || n != len(b) {
			t.Fatalf("decode frame: %v (%d of %d bytes)", err, n, len(b))
		}
		if out != nil {
			ext := func(c *remoting.Command) map[string]string {
				m := map[string]string{}
				c.EachExt(func(k, v string) { m[k] = v })
				return m
			}
			if !reflect.DeepEqual(ext(out), ext(got)) || string(out.Body) != string(got.Body) {
				t.Fatalf("binary and JSON headers decode differently: %v vs %v", ext(out), ext(got))
			}
		}
		out = got
	}
	return out
}

func same(t *testing.T, what string, got, want any, code, wantCode int16) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: code %d, want %d", what, code, wantCode)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s round trip:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestRequestHeadersRoundTrip: for every header type, Decode(Encode(h))
// is h, through the wire, and the request carries its code.
func TestRequestHeadersRoundTrip(t *testing.T) {
	req := remoting.NewRequest(CodePullMessage, nil, nil)
	pull := PullRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 3, QueueOffset: 1 << 40, MaxMsgNums: 32,
		SysFlag: PullFlagSuspend | PullFlagSubscription, CommitOffset: -1, SuspendTimeoutMillis: 20000,
		Subscription: "a || b", SubVersion: 1733046000000123456, ExpressionType: "TAG"}
	c := overWire(t, EncodePullRequest(pull))
	got, err := DecodePullRequest(c)
	same(t, "pull", got, pull, c.Code, CodePullMessage)
	check(t, err)

	pr := PullResponse{NextBeginOffset: 10, MinOffset: 1, MaxOffset: 99, SuggestWhichBrokerID: 0}
	c = overWire(t, EncodePullResponse(req, RespPullNotFound, pr))
	gpr, err := DecodePullResponse(c)
	same(t, "pull answer", gpr, pr, c.Code, RespPullNotFound)
	check(t, err)

	qco := QueryConsumerOffsetRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 7}
	c = overWire(t, EncodeQueryConsumerOffsetRequest(qco))
	gqco, err := DecodeQueryConsumerOffsetRequest(c)
	same(t, "query consumer offset", gqco, qco, c.Code, CodeQueryConsumerOffset)
	check(t, err)

	uco := UpdateConsumerOffsetRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 7, CommitOffset: 12345}
	c = overWire(t, EncodeUpdateConsumerOffsetRequest(uco))
	guco, err := DecodeUpdateConsumerOffsetRequest(c)
	same(t, "update consumer offset", guco, uco, c.Code, CodeUpdateConsumerOffset)
	check(t, err)

	so := SearchOffsetRequest{Topic: "T", QueueID: 2, Timestamp: 1733046000000}
	c = overWire(t, EncodeSearchOffsetRequest(so))
	gso, err := DecodeSearchOffsetRequest(c)
	same(t, "search offset", gso, so, c.Code, CodeSearchOffsetByTimestamp)
	check(t, err)

	qo := QueueOffsetRequest{Topic: "T", QueueID: 5}
	c = overWire(t, EncodeGetMaxOffsetRequest(qo))
	gqo, err := DecodeQueueOffsetRequest(c)
	same(t, "max offset", gqo, qo, c.Code, CodeGetMaxOffset)
	check(t, err)
	c = overWire(t, EncodeGetMinOffsetRequest(qo))
	gqo, err = DecodeQueueOffsetRequest(c)
	same(t, "min offset", gqo, qo, c.Code, CodeGetMinOffset)
	check(t, err)

	or := OffsetResponse{Offset: 1<<63 - 1}
	c = overWire(t, EncodeOffsetResponse(req, RespSuccess, or))
	gor, err := DecodeOffsetResponse(c)
	same(t, "offset answer", gor, or, c.Code, RespSuccess)
	check(t, err)

	ur := UnregisterClientRequest{ClientID: "10.0.0.1@1", ProducerGroup: "pg", ConsumerGroup: "cg"}
	c = overWire(t, EncodeUnregisterClientRequest(ur))
	gur, err := DecodeUnregisterClientRequest(c)
	same(t, "unregister", gur, ur, c.Code, CodeUnregisterClient)
	check(t, err)

	cg := ConsumerGroupRequest{ConsumerGroup: "cg"}
	c = overWire(t, EncodeGetConsumerListRequest(cg))
	gcg, err := DecodeConsumerGroupRequest(c)
	same(t, "consumer list", gcg, cg, c.Code, CodeGetConsumerListByGroup)
	check(t, err)
	c = overWire(t, EncodeNotifyConsumerIDsChanged(cg))
	gcg, err = DecodeConsumerGroupRequest(c)
	same(t, "notify consumer ids changed", gcg, cg, c.Code, CodeNotifyConsumerIDsChanged)
	check(t, err)

	qm := QueryMessageRequest{Topic: "T", Key: "k1", MaxNum: 64, BeginTimestamp: 1, EndTimestamp: 1<<63 - 1}
	c = overWire(t, EncodeQueryMessageRequest(qm))
	gqm, err := DecodeQueryMessageRequest(c)
	same(t, "query message", gqm, qm, c.Code, CodeQueryMessage)
	check(t, err)

	qmr := QueryMessageResponse{IndexLastUpdateTimestamp: 1733046000000, IndexLastUpdatePhyoffset: 0}
	c = overWire(t, EncodeQueryMessageResponse(req, RespSuccess, qmr))
	gqmr, err := DecodeQueryMessageResponse(c)
	same(t, "query message answer", gqmr, qmr, c.Code, RespSuccess)
	check(t, err)

	for _, vm := range []ViewMessageRequest{{Offset: 4096}, {Topic: "T", Offset: 0}} {
		c = overWire(t, EncodeViewMessageRequest(vm))
		gvm, err := DecodeViewMessageRequest(c)
		same(t, "view message", gvm, vm, c.Code, CodeViewMessageByID)
		check(t, err)
	}

	sb := SendBackRequest{Offset: 8192, Group: "cg", DelayLevel: -1, OriginMsgID: "UNIQ", OriginTopic: "T", UnitMode: true, MaxReconsumeTimes: 16}
	c = overWire(t, EncodeSendBackRequest(sb))
	gsb, err := DecodeSendBackRequest(c)
	same(t, "send back", gsb, sb, c.Code, CodeConsumerSendMsgBack)
	check(t, err)

	for _, rd := range []ResendDLQRequest{{Group: "cg", Offset: 77}, {Group: "cg", MsgID: "0A00000100002A9F0000000000001000"}, {Group: "cg", Offset: 3, MsgID: "id"}} {
		c = overWire(t, EncodeResendDLQRequest(rd))
		grd, err := DecodeResendDLQRequest(c)
		same(t, "resend dlq", grd, rd, c.Code, CodePetrelResendDLQ)
		check(t, err)
	}

	cd := CancelDelayedRequest{MsgID: "AC110001000078308DB174A4F1C30000", Topic: "Orders"}
	c = overWire(t, EncodeCancelDelayedRequest(cd))
	gcd, err := DecodeCancelDelayedRequest(c)
	same(t, "cancel delayed", gcd, cd, c.Code, CodePetrelCancelDelayed)
	check(t, err)

	rc := RecallRequest{ProducerGroup: "pg", Topic: "Orders", RecallHandle: "djEgT3JkZXJzIGJyb2tlci1hIDEgSUQ="}
	c = overWire(t, EncodeRecallRequest(rc))
	grc, err := DecodeRecallRequest(c)
	same(t, "recall", grc, rc, c.Code, CodeRecallMessage)
	check(t, err)

	et := EndTransactionRequest{ProducerGroup: "pg", TranStateTableOffset: 4, CommitLogOffset: 1 << 33, CommitOrRollback: TransactionCommit,
		FromTransactionCheck: true, MsgID: "UNIQ", TransactionID: "tx-1"}
	c = overWire(t, EncodeEndTransactionRequest(et))
	get, err := DecodeEndTransactionRequest(c)
	same(t, "end transaction", get, et, c.Code, CodeEndTransaction)
	check(t, err)

	ct := CheckTransactionStateRequest{TranStateTableOffset: 4, CommitLogOffset: 1 << 33, MsgID: "UNIQ", TransactionID: "tx-1", OffsetMsgID: "0A000001"}
	c = overWire(t, EncodeCheckTransactionState(ct, []byte("half")))
	gct, err := DecodeCheckTransactionState(c)
	same(t, "check transaction", gct, ct, c.Code, CodeCheckTransactionState)
	check(t, err)
	if string(c.Body) != "half" {
		t.Errorf("check transaction body %q", c.Body)
	}

	for _, ro := range []ResetOffsetRequest{{Topic: "T", Group: "cg", Timestamp: 1733046000000, IsForce: true}, {Topic: "T", Group: "cg", Timestamp: ResetOffsetLatest}} {
		c = overWire(t, EncodeResetOffsetRequest(ro))
		gro, err := DecodeResetOffsetRequest(c)
		same(t, "reset offset", gro, ro, c.Code, CodeInvokeBrokerToResetOffset)
		check(t, err)
	}
}

// TestMessageBodiesRoundTrip: every body type survives Encode then Decode.
func TestMessageBodiesRoundTrip(t *testing.T) {
	req := remoting.NewRequest(CodeHeartBeat, nil, nil)
	hb := HeartbeatData{
		ClientID:        "10.0.0.1@4242#1",
		ProducerDataSet: []ProducerData{{GroupName: "pg"}, {GroupName: "CLIENT_INNER_PRODUCER"}},
		ConsumerDataSet: []ConsumerData{{
			GroupName: "cg", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", UnitMode: true,
			SubscriptionDataSet: []SubscriptionData{
				{Topic: "T", SubString: "a || b", TagsSet: []string{"a", "b"}, CodeSet: CodeSet{97, 98}, SubVersion: 1733046000000123456, ExpressionType: "TAG"},
				{ClassFilterMode: true, Topic: "%RETRY%cg", SubString: "*", TagsSet: []string{}, CodeSet: CodeSet{}, SubVersion: 1, ExpressionType: "TAG"},
			},
		}},
	}
	c := overWire(t, EncodeHeartbeat(hb))
	ghb, err := DecodeHeartbeat(c)
	same(t, "heartbeat", ghb, hb, c.Code, CodeHeartBeat)
	check(t, err)

	lb := LockBatchBody{ConsumerGroup: "cg", ClientID: "c1", MQSet: []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 3}}}
	c = overWire(t, EncodeLockBatchRequest(lb))
	glb, err := DecodeLockBatch(c)
	same(t, "lock", glb, lb, c.Code, CodeLockBatchMQ)
	check(t, err)
	c = overWire(t, EncodeUnlockBatchRequest(lb))
	glb, err = DecodeLockBatch(c)
	same(t, "unlock", glb, lb, c.Code, CodeUnlockBatchMQ)
	check(t, err)

	lr := LockBatchResponse{LockOKMQSet: lb.MQSet[1:]}
	c = overWire(t, EncodeLockBatchResponse(req, lr))
	glr, err := DecodeLockBatchResponse(c)
	same(t, "lock answer", glr, lr, c.Code, RespSuccess)
	check(t, err)

	cl := ConsumerListBody{ConsumerIDList: []string{"c1", "c2"}}
	c = overWire(t, EncodeConsumerListResponse(req, cl))
	gcl, err := DecodeConsumerListResponse(c)
	same(t, "consumer list", gcl, cl, c.Code, RespSuccess)
	check(t, err)

	table := OffsetTable{{Topic: "T", BrokerName: "b", QueueID: 0}: 5, {Topic: "T", BrokerName: "b", QueueID: 1}: 0, {Topic: `we"ird`, BrokerName: "b<2>", QueueID: 9}: 1 << 40}
	c = overWire(t, EncodeResetOffsetResponse(req, EncodeOffsetTable(table)))
	gt, err := DecodeResetOffsetResponse(c)
	same(t, "reset answer", gt, table, c.Code, RespSuccess)
	check(t, err)

	ro := ResetOffsetRequest{Topic: "T", Group: "cg", Timestamp: 5, IsForce: true}
	c = overWire(t, EncodeResetClientOffset(ro, EncodeOffsetTable(table)))
	gro, gt, err := DecodeResetClientOffset(c)
	same(t, "reset notice", gro, ro, c.Code, CodeResetConsumerClientOffset)
	same(t, "reset notice table", gt, table, 0, 0)
	check(t, err)
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("decode: %v", err)
	}
}

// TestEmptySetsAreWrittenAsArrays: Java reads a null set as absent; an
// encoder never writes one.
func TestEmptySetsAreWrittenAsArrays(t *testing.T) {
	b := string(EncodeHeartbeatBody(HeartbeatData{ClientID: "c", ConsumerDataSet: []ConsumerData{{GroupName: "g", SubscriptionDataSet: []SubscriptionData{{Topic: "T"}}}}}))
	for _, want := range []string{`"producerDataSet":[]`, `"tagsSet":[]`, `"codeSet":[]`} {
		if !strings.Contains(b, want) {
			t.Errorf("heartbeat %s lacks %s", b, want)
		}
	}
	if strings.Contains(b, "null") {
		t.Errorf("heartbeat %s has a null", b)
	}
	req := remoting.NewRequest(CodeLockBatchMQ, nil, nil)
	for _, c := range []*remoting.Command{EncodeLockBatchResponse(req, LockBatchResponse{}), EncodeConsumerListResponse(req, ConsumerListBody{}), EncodeLockBatchRequest(LockBatchBody{})} {
		if strings.Contains(string(c.Body), "null") || !strings.Contains(string(c.Body), "[]") {
			t.Errorf("body %s: want [] for the empty set", c.Body)
		}
	}
	if got := string(EncodeOffsetTable(nil)); got != `{"offsetTable":{}}` {
		t.Errorf("empty offset table %s", got)
	}
}

// TestRequiredFieldsAreNamed: a missing required field, or one that is not
// a number, fails the decode with a *FieldError naming it; optional fields
// may be absent.
func TestRequiredFieldsAreNamed(t *testing.T) {
	full := EncodePullRequest(PullRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 1, QueueOffset: 2, MaxMsgNums: 32, SysFlag: 6, SuspendTimeoutMillis: 1, SubVersion: 1}).ExtFields
	for _, field := range []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis", "subVersion"} {
		for _, v := range []string{"", "x"} {
			ext := map[string]string{}
			for k, val := range full {
				ext[k] = val
			}
			if v == "" {
				delete(ext, field)
			} else if field == "consumerGroup" || field == "topic" {
				continue // any text is a name
			} else {
				ext[field] = v
			}
			_, err := DecodePullRequest(remoting.NewRequest(CodePullMessage, ext, nil))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != field || fe.Missing != (v == "") {
				t.Errorf("pull without a good %s (%q): %v", field, v, err)
			}
		}
	}
	// Optional: subscription, expressionType.
	delete(full, "subscription")
	delete(full, "expressionType")
	if _, err := DecodePullRequest(remoting.NewRequest(CodePullMessage, full, nil)); err != nil {
		t.Errorf("pull without the optional fields: %v", err)
	}
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"update offset", second(DecodeUpdateConsumerOffsetRequest(remoting.NewRequest(15, map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "1"}, nil))), "commitOffset"},
		{"max offset", second(DecodeQueueOffsetRequest(remoting.NewRequest(30, map[string]string{"topic": "T", "queueId": "one"}, nil))), "queueId"},
		{"search", second(DecodeSearchOffsetRequest(remoting.NewRequest(29, map[string]string{"topic": "T", "queueId": "1", "timestamp": "yesterday"}, nil))), "timestamp"},
		{"send back", second(DecodeSendBackRequest(remoting.NewRequest(36, map[string]string{"group": "g", "offset": "1"}, nil))), "delayLevel"},
		{"end transaction", second(DecodeEndTransactionRequest(remoting.NewRequest(37, map[string]string{"producerGroup": "g", "tranStateTableOffset": "1", "commitLogOffset": "9999999999999999999999", "commitOrRollback": "8"}, nil))), "commitLogOffset"},
		{"reset", second(DecodeResetOffsetRequest(remoting.NewRequest(222, map[string]string{"topic": "T", "group": "g", "timestamp": "now"}, nil))), "timestamp"},
		{"reset group", second(DecodeResetOffsetRequest(remoting.NewRequest(222, map[string]string{"topic": "T"}, nil))), "group"},
		{"view", second(DecodeViewMessageRequest(remoting.NewRequest(33, map[string]string{"topic": "T"}, nil))), "offset"},
		{"query", second(DecodeQueryMessageRequest(remoting.NewRequest(12, map[string]string{"topic": "T", "key": "k", "maxNum": "32", "beginTimestamp": "0"}, nil))), "endTimestamp"},
		{"unregister", second(DecodeUnregisterClientRequest(remoting.NewRequest(35, map[string]string{"producerGroup": "pg"}, nil))), "clientID"},
		{"cancel delayed", second(DecodeCancelDelayedRequest(remoting.NewRequest(10102, nil, nil))), "msgId"},
		{"pull answer", second(DecodePullResponse(remoting.NewRequest(0, map[string]string{"nextBeginOffset": "1", "minOffset": "0"}, nil))), "maxOffset"},
	} {
		var fe *FieldError
		if !errors.As(tc.err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a FieldError naming %s", tc.name, tc.err, tc.field)
		}
	}
	// Absent optional fields read as their zero value (or, for a reset's
	// timestamp, as latest).
	r, err := DecodeResetOffsetRequest(remoting.NewRequest(222, map[string]string{"topic": "T", "group": "g"}, nil))
	if err != nil || r.Timestamp != ResetOffsetLatest || r.IsForce {
		t.Errorf("reset without timestamp: %+v, %v", r, err)
	}
	sb, err := DecodeSendBackRequest(remoting.NewRequest(36, map[string]string{"group": "g", "offset": "1", "delayLevel": "0"}, nil))
	if err != nil || sb.MaxReconsumeTimes != 0 || sb.OriginMsgID != "" {
		t.Errorf("send back without the optional fields: %+v, %v", sb, err)
	}
	et, err := DecodeEndTransactionRequest(remoting.NewRequest(37, map[string]string{"producerGroup": "g", "tranStateTableOffset": "1", "commitLogOffset": "2", "commitOrRollback": "8", "msgId": ""}, nil))
	if err != nil || et.MsgID != "" {
		t.Errorf("end transaction with an empty msgId (the Go client may send one): %+v, %v", et, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestHeartbeatReadsWhatClientsWrite: the official Go client writes codeSet
// as strings, Java as numbers; keys match whatever their case; unknown
// keys are skipped. A body that is not JSON fails with the text the front
// has always sent as the remark.
func TestHeartbeatReadsWhatClientsWrite(t *testing.T) {
	goBody := `{"clientID":"127.0.0.1@1","producerDataSet":[],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1733046000000123456,"expressionType":"TAG"}],"unitMode":false}]}`
	javaBody := `{"clientID":"127.0.0.1@1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"cg","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[97,98],"expressionType":"TAG","subString":"a || b","subVersion":1733046000000123456,"tagsSet":["a","b"],"topic":"T"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}`
	for name, body := range map[string]string{"go": goBody, "java": javaBody, "odd codes": strings.Replace(goBody, `["97","98"]`, `["97",{"x":1},98,"nope",null]`, 1)} {
		h, err := DecodeHeartbeatBody([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := h.ConsumerDataSet[0].SubscriptionDataSet[0]
		if h.ClientID != "127.0.0.1@1" || s.SubVersion != 1733046000000123456 || !reflect.DeepEqual(s.CodeSet, CodeSet{97, 98}) || !reflect.DeepEqual(s.TagsSet, []string{"a", "b"}) {
			t.Errorf("%s: %+v", name, h)
		}
	}
	h, err := DecodeHeartbeatBody([]byte(`{"clientId":"lower","CONSUMERDATASET":[{"groupname":"g","subscriptionDataSet":[{"topic":"T","codeSet":"not a set"}]}]}`))
	if err != nil || h.ClientID != "lower" || h.ConsumerDataSet[0].GroupName != "g" || h.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet != nil {
		t.Errorf("case-insensitive keys: %+v, %v", h, err)
	}
	_, err = DecodeHeartbeatBody([]byte(`{"clientID":`))
	var se *json.SyntaxError
	if !errors.As(err, &se) || err.Error() != "heartbeat body is not valid JSON: unexpected end of JSON input" {
		t.Errorf("bad heartbeat: %v", err)
	}
	_, err = DecodeLockBatch(remoting.NewRequest(CodeUnlockBatchMQ, nil, []byte("[")))
	if err == nil || !strings.HasPrefix(err.Error(), "unlock body is not valid JSON: ") {
		t.Errorf("bad unlock: %v", err)
	}
}

// TestOffsetTableForms: the table is written as fastjson writes it (queue
// objects as keys, fields in name order) and read in that form and in the
// array form.
func TestOffsetTableForms(t *testing.T) {
	table := OffsetTable{{Topic: "T", BrokerName: "b", QueueID: 1}: 7, {Topic: "T", BrokerName: "b", QueueID: 0}: 5}
	const want = `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:7}}`
	if got := string(EncodeOffsetTable(table)); got != want {
		t.Fatalf("encoded\n %s\nwant\n %s", got, want)
	}
	for _, body := range []string{
		want,
		` {"offsetTable": { {"topic":"T","queueId":0,"brokerName":"b"} : 5 , {"brokerName":"b","queueId":1,"topic":"T"}:7 } } `,
		`{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":0},5],[{"topic":"T","brokerName":"b","queueId":1},7]]}`,
	} {
		got, err := DecodeOffsetTable([]byte(body))
		if err != nil || !reflect.DeepEqual(got, table) {
			t.Errorf("%s: %v, %v", body, got, err)
		}
	}
	for _, bad := range []string{``, `{"offsetTable":5}`, `{"offsetTable":{{"topic":"T"}5}}`, `{"offsetTable":{{"topic":"T"}:"5"}}`, `{"offsetTable":[[{"topic":"T"}]]}`, `{"offsetTable":{{"topic":"T}:1}}`} {
		if _, err := DecodeOffsetTable([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	type stats struct {
		MinOffset int64 `json:"minOffset"`
	}
	b, err := AppendMQMap([]byte(`{"x":`), map[MessageQueue]stats{{Topic: "T", QueueID: 2}: {MinOffset: 3}})
	if err != nil || string(b) != `{"x":{{"brokerName":"","queueId":2,"topic":"T"}:{"minOffset":3}}` {
		t.Fatalf("AppendMQMap: %s, %v", b, err)
	}
	m, err := DecodeMQMap[stats](append(b, '}'), "x")
	if err != nil || m[MessageQueue{Topic: "T", QueueID: 2}].MinOffset != 3 {
		t.Fatalf("DecodeMQMap: %v, %v", m, err)
	}
}

// TestDecodeMQMapRawValues: keys whose strings hold the scanner's own
// delimiters, object and scalar values, both forms, an empty map, and
// refusals (moved here with the CLI's copy of the scanner).
func TestDecodeMQMapRawValues(t *testing.T) {
	q0, q1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, MessageQueue{Topic: "T,}:x", BrokerName: "b", QueueID: 1}
	for name, body := range map[string]string{
		"fastjson": `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":1,"maxOffset":5},{"brokerName":"b","queueId":1,"topic":"T,}:x"}:{"minOffset":0,"maxOffset":0}},"topicPutTps":0}`,
		"array":    `{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":0},{"minOffset":1,"maxOffset":5}],[{"topic":"T,}:x","brokerName":"b","queueId":1},{"minOffset":0,"maxOffset":0}]]}`,
	} {
		got, err := DecodeMQMap[json.RawMessage]([]byte(body), "offsetTable")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != 2 || string(got[q0]) != `{"minOffset":1,"maxOffset":5}` || string(got[q1]) != `{"minOffset":0,"maxOffset":0}` {
			t.Fatalf("%s: %+v", name, got)
		}
	}
	scalar, err := DecodeMQMap[json.RawMessage]([]byte(`{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:42}}`), "offsetTable")
	if err != nil || len(scalar) != 1 || string(scalar[MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}]) != "42" {
		t.Fatalf("scalar values: %+v %v", scalar, err)
	}
	if got, err := DecodeMQMap[json.RawMessage]([]byte(`{"offsetTable":{}}`), "offsetTable"); err != nil || len(got) != 0 {
		t.Fatalf("empty: %+v %v", got, err)
	}
	for _, bad := range []string{`{"other":1}`, `{"offsetTable":{{"topic":"T"}`, `{"offsetTable":{{"topic":"T"}:1;}`} {
		if _, err := DecodeMQMap[json.RawMessage]([]byte(bad), "offsetTable"); err == nil {
			t.Fatalf("%s: no error", bad)
		}
	}
}

// TestSendResponseRoundTrip: a send answer decodes to what was encoded,
// through the wire, with its fields in the order Petrel writes them, and a
// missing or malformed required field is refused by name.
func TestSendResponseRoundTrip(t *testing.T) {
	req := remoting.NewRequest(CodeSendMessageV2, nil, nil)
	sr := SendResponse{MsgID: "7F00000100002A9F0000000000001000", QueueID: 3, QueueOffset: 1<<40 + 7, Region: "DefaultRegion", TraceOn: true}
	resp := EncodeSendResponse(req, RespFlushDiskTimeout, sr)
	var keys []string
	resp.EachExt(func(k, _ string) { keys = append(keys, k) })
	if want := []string{"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("fields %v, want %v", keys, want)
	}
	c := overWire(t, resp)
	got, err := DecodeSendResponse(c)
	if err != nil || c.Opaque != req.Opaque || !c.IsResponse() {
		t.Fatalf("send response: %v, opaque %d of %d, response %v", err, c.Opaque, req.Opaque, c.IsResponse())
	}
	same(t, "send response", got, sr, c.Code, RespFlushDiskTimeout)
	for ext, field := range map[string]string{
		`{"queueId":"1","queueOffset":"2"}`:                   "msgId",
		`{"msgId":"m","queueOffset":"2"}`:                     "queueId",
		`{"msgId":"m","queueId":"1"}`:                         "queueOffset",
		`{"msgId":"m","queueId":"x","queueOffset":"2"}`:       "queueId",
		`{"msgId":"m","queueId":"1","queueOffset":"9e9e9e9"}`: "queueOffset",
	} {
		var m map[string]string
		if err := json.Unmarshal([]byte(ext), &m); err != nil {
			t.Fatal(err)
		}
		resp := remoting.NewResponse(req, RespSuccess, "")
		resp.ExtFields = m
		_, err := DecodeSendResponse(resp)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v, want a FieldError naming %s", ext, err, field)
		}
	}
}
