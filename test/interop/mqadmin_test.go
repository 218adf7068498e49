package interop

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// mqadminCommand is one mqadmin (rocketmq-tools 5.3.1) command line of
// the compatibility run: its name and its arguments, whose {placeholders}
// are filled in from the run's fixtures.
type mqadminCommand struct {
	name string
	args string
	// local: the command reads or writes local files only (RocksDB
	// stores, compaction logs); nothing is asked of a server.
	local bool
	// loops: the command runs until stopped (a monitor); it is given
	// mqadminLoopTimeout and judged by what it printed meanwhile.
	loops bool
}

// mqadminCommands is every command of mqadmin 5.3.1's list, in its order
// except where a command needs what an earlier one made (updateSubGroup
// before deleteSubGroup, ...) or goes on after it returns (clusterRT,
// startMonitoring: last). A command missing here fails the test (the
// list is checked against mqadmin's own).
var mqadminCommands = []mqadminCommand{
	{name: "updateTopic", args: "-n {ns} -c {cluster} -t CompatNewTopic -r 4 -w 4"},
	{name: "updateTopicList", args: "-n {ns} -c {cluster} -f {dir}/topics.json"},
	{name: "topicList", args: "-n {ns}"},
	{name: "topicRoute", args: "-n {ns} -t {topic}"},
	{name: "topicStatus", args: "-n {ns} -t {topic}"},
	{name: "topicClusterList", args: "-n {ns} -t {topic}"},
	{name: "updateTopicPerm", args: "-n {ns} -c {cluster} -t CompatNewTopic -p 6"},
	{name: "deleteTopic", args: "-n {ns} -c {cluster} -t CompatNewTopic"},
	{name: "updateSubGroup", args: "-n {ns} -c {cluster} -g CompatNewGroup"},
	{name: "updateSubGroupList", args: "-n {ns} -c {cluster} -f {dir}/groups.json"},
	{name: "setConsumeMode", args: "-n {ns} -c {cluster} -g {group} -t {topic} -m PULL"},
	{name: "getConsumerConfig", args: "-n {ns} -g {group}"},
	{name: "deleteSubGroup", args: "-n {ns} -c {cluster} -g CompatNewGroup"},
	{name: "updateBrokerConfig", args: "-n {ns} -b {broker} -k autoCreateTopicEnable -v true"},
	{name: "getBrokerConfig", args: "-n {ns} -b {broker}"},
	{name: "addBroker", args: "-n {ns} -c {broker} -b {dir}/broker.conf"},
	{name: "removeBroker", args: "-n {ns} -c {broker} -b {cluster}:{brokerName}:1"},
	{name: "resetMasterFlushOffset", args: "-n {ns} -b {broker} -o 0"},
	{name: "brokerStatus", args: "-n {ns} -b {broker}"},
	{name: "queryMsgById", args: "-n {ns} -t {topic} -i {offsetMsgId}"},
	{name: "queryMsgByKey", args: "-n {ns} -t {topic} -k compat-key-0"},
	{name: "queryMsgByUniqueKey", args: "-n {ns} -t {topic} -i {msgId}"},
	{name: "queryMsgByOffset", args: "-n {ns} -t {topic} -b {brokerName} -i {queue} -o {offset}"},
	{name: "queryMsgTraceById", args: "-n {ns} -i {msgId}"},
	{name: "printMsg", args: "-n {ns} -t {topic}"},
	{name: "printMsgByQueue", args: "-n {ns} -t {topic} -a {brokerName} -i {queue}"},
	{name: "sendMsgStatus", args: "-n {ns} -b {brokerName} -c 1"},
	{name: "brokerConsumeStats", args: "-n {ns} -b {broker}"},
	{name: "producerConnection", args: "-n {ns} -g CompatProducer -t {topic}"},
	{name: "consumerConnection", args: "-n {ns} -g {group}"},
	{name: "consumerProgress", args: "-n {ns} -g {group}"},
	{name: "consumerStatus", args: "-n {ns} -g {group}"},
	{name: "cloneGroupOffset", args: "-n {ns} -s {group} -d {offsetGroup} -t {topic}"},
	{name: "producer", args: "-n {ns} -b {broker}"},
	{name: "clusterList", args: "-n {ns}"},
	{name: "updateKvConfig", args: "-n {ns} -s CompatSpace -k compatKey -v compatValue"},
	{name: "deleteKvConfig", args: "-n {ns} -s CompatSpace -k compatKey"},
	{name: "wipeWritePerm", args: "-n {ns} -b {brokerName}"},
	{name: "addWritePerm", args: "-n {ns} -b {brokerName}"},
	{name: "resetOffsetByTime", args: "-n {ns} -g {offsetGroup} -t {topic} -s now"},
	{name: "skipAccumulatedMessage", args: "-n {ns} -g {offsetGroup} -t {topic}"},
	{name: "updateOrderConf", args: "-n {ns} -t {topic} -m get"},
	{name: "cleanExpiredCQ", args: "-n {ns} -b {broker}"},
	{name: "deleteExpiredCommitLog", args: "-n {ns} -b {broker}"},
	{name: "cleanUnusedTopic", args: "-n {ns} -b {broker}"},
	{name: "statsAll", args: "-n {ns} -t {topic}"},
	{name: "allocateMQ", args: "-n {ns} -t {topic} -i 127.0.0.1@a,127.0.0.1@b"},
	{name: "checkMsgSendRT", args: "-n {ns} -t {topic} -a 3 -s 16"},
	{name: "getNamesrvConfig", args: "-n {ns}"},
	{name: "updateNamesrvConfig", args: "-n {ns} -k orderMessageEnable -v true"},
	{name: "queryCq", args: "-n {ns} -t {topic} -q {queue} -i 0 -c 3"},
	{name: "sendMessage", args: "-n {ns} -t {topic} -p compat-mqadmin-body"},
	{name: "consumeMessage", args: "-n {ns} -t {topic} -c 1 -g CompatMQAdminConsume"},
	{name: "updateAclConfig", args: "-n {ns} -c {cluster} -a compatAK -s compatSK1234"},
	{name: "deleteAclConfig", args: "-n {ns} -c {cluster} -a compatAK"},
	{name: "clusterAclConfigVersion", args: "-n {ns} -c {cluster}"},
	{name: "updateGlobalWhiteAddr", args: "-n {ns} -c {cluster} -g 127.0.0.1"},
	{name: "updateStaticTopic", args: "-n {ns} -c {cluster} -t CompatStaticTopic -qn 2"},
	{name: "remappingStaticTopic", args: "-n {ns} -b {brokerName} -t CompatStaticTopic"},
	{name: "exportMetadata", args: "-n {ns} -b {broker} -f {dir}/export"},
	{name: "exportConfigs", args: "-n {ns} -c {cluster} -f {dir}/export"},
	{name: "exportMetrics", args: "-n {ns} -c {cluster} -f {dir}/export"},
	{name: "exportMetadataInRocksDB", args: "-p {dir}/rocksdb -t topics", local: true},
	{name: "haStatus", args: "-n {ns} -b {broker}"},
	{name: "getSyncStateSet", args: "-n {ns} -a {ns} -b {brokerName}"},
	{name: "getBrokerEpoch", args: "-n {ns} -b {brokerName}"},
	{name: "getControllerMetaData", args: "-n {ns} -a {ns}"},
	{name: "getControllerConfig", args: "-n {ns} -a {ns}"},
	{name: "updateControllerConfig", args: "-n {ns} -a {ns} -k notifyBrokerRoleChanged -v true"},
	{name: "electMaster", args: "-n {ns} -a {ns} -c {cluster} -bn {brokerName} -b 0"},
	{name: "cleanBrokerMetadata", args: "-n {ns} -a {ns} -c {cluster} -bn {brokerName} -b 1"},
	{name: "dumpCompactionLog", args: "-f {dir}/compaction.log", local: true},
	{name: "getColdDataFlowCtrInfo", args: "-n {ns} -b {broker}"},
	{name: "updateColdDataFlowCtrGroupConfig", args: "-n {ns} -b {broker} -g {group} -v 1000"},
	{name: "removeColdDataFlowCtrGroupConfig", args: "-n {ns} -b {broker} -g {group}"},
	{name: "setCommitLogReadAheadMode", args: "-n {ns} -b {broker} -m 0"},
	{name: "createUser", args: "-n {ns} -b {broker} -u compatuser -p compatSecret1"},
	{name: "updateUser", args: "-n {ns} -b {broker} -u compatuser -p compatSecret2"},
	{name: "getUser", args: "-n {ns} -b {broker} -u compatuser"},
	{name: "listUser", args: "-n {ns} -b {broker}"},
	{name: "copyUser", args: "-n {ns} -f {broker} -t {broker} -u compatuser"},
	{name: "createAcl", args: "-n {ns} -b {broker} -s User:compatuser -r Topic:{topic} -a Pub -d Allow"},
	{name: "updateAcl", args: "-n {ns} -b {broker} -s User:compatuser -r Topic:{topic} -a Pub,Sub -d Allow"},
	{name: "getAcl", args: "-n {ns} -b {broker} -s User:compatuser"},
	{name: "listAcl", args: "-n {ns} -b {broker}"},
	{name: "copyAcl", args: "-n {ns} -f {broker} -t {broker} -s User:compatuser"},
	{name: "deleteAcl", args: "-n {ns} -b {broker} -s User:compatuser -r Topic:{topic}"},
	{name: "deleteUser", args: "-n {ns} -b {broker} -u compatuser"},
	{name: "rocksDBConfigToJson", args: "-p {dir}/rocksdb -t topics", local: true},
	{name: "checkRocksdbCqWriteProgress", args: "-n {ns} -c {cluster}"},
	// Last: it goes on sending after it is left behind.
	{name: "clusterRT", args: "-n {ns} -a 3 -s 16 -c {cluster} -p 1", loops: true},
	// startMonitoring after even clusterRT: its MonitorService keeps
	// polling the broker (30, 203, 208, 307, 351) from the shared JVM
	// after the command returns, and those requests landed in whichever
	// command ran then (clusterRT's leftover sends are served).
	{name: "startMonitoring", args: "-n {ns}", local: false},
}

// mqadminMustWork is what issue 19 requires to work and does
// (its whole list), and the other admin commands built for it; the
// table check catches a change of any other command.
var mqadminMustWork = []string{
	"updateTopic", "deleteTopic", "topicList", "topicRoute", "topicStatus", "topicClusterList",
	"updateSubGroup", "deleteSubGroup", "consumerProgress", "consumerConnection",
	"queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey", "queryMsgByOffset", "printMsg", "printMsgByQueue",
	"brokerStatus", "clusterList", "getBrokerConfig", "updateBrokerConfig", "resetOffsetByTime",
	"wipeWritePerm", "addWritePerm", "updateKvConfig", "deleteKvConfig",
	"producerConnection", "producer", "cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog",
	"brokerConsumeStats", "queryCq", "statsAll", "getNamesrvConfig", "updateNamesrvConfig", "exportMetrics",
	"createUser", "updateUser", "getUser", "listUser", "deleteUser",
	"createAcl", "updateAcl", "getAcl", "listAcl", "deleteAcl",
	"consumerStatus", "setConsumeMode", "updateTopicList", "updateSubGroupList",
	"queryMsgTraceById",
}

// compatDoc is the file the run's table lives in, between the markers.
const (
	compatDoc          = "../../docs/compatibility.md"
	mqadminBegin       = "<!-- mqadmin table: generated by test/interop TestMQAdminCompatibility; PETREL_UPDATE_COMPAT=1 rewrites it -->"
	mqadminEnd         = "<!-- end of the mqadmin table -->"
	mqadminTimeout     = 20 // seconds a command may run
	mqadminLoopTimeout = 5  // seconds a command that loops runs
	updateCompatEnv    = "PETREL_UPDATE_COMPAT"
)

type mqadminResult struct {
	cmd    mqadminCommand
	status string // works, partly, refused, local
	why    string // refused: the answer, normalised
	codes  []int32
	out    string
}

// TestMQAdminCompatibility runs every mqadmin command against a petrel
// server, with a topic, a live producer group and a live consumer group
// as fixtures, and checks docs/compatibility.md's table against what each
// did: works, or refused with the answer mqadmin printed, and the request
// codes the broker received for it.
func TestMQAdminCompatibility(t *testing.T) {
	t.Parallel()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startPetrel(t, serverOptions{extraArgs: []string{"--http-listen", httpAddr}})
	const topic, group = "CompatTopic", "CompatGroup"
	createTopics(t, p, topic)
	prod := newProducer(t, p, producer.WithGroupName("CompatProducer"))
	var first *primitive.SendResult
	for i := range 3 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("compat-body-%d", i)))
		m.WithKeys([]string{fmt.Sprintf("compat-key-%d", i)})
		m.WithTag("a")
		res, err := prod.SendSync(context.Background(), m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		if first == nil {
			first = res
		}
	}
	// A trace record of the first message, laid out as a traced Java
	// client writes it (TraceDataEncoder: fields split by 0x01, the record
	// ended by 0x02) and keyed by its msgId, so queryMsgTraceById finds and
	// decodes one in RMQ_SYS_TRACE_TOPIC. (Real traced clients are the
	// Java 4.x trace scenario's.)
	trace := strings.Join([]string{"Pub", strconv.FormatInt(time.Now().UnixMilli(), 10), "DefaultRegion", "CompatProducer", topic,
		first.MsgID, "a", "compat-key-0", p.brAddr, "13", "2", "0", first.OffsetMsgID, "true"}, "\x01") + "\x02"
	tm := primitive.NewMessage("RMQ_SYS_TRACE_TOPIC", []byte(trace))
	tm.WithKeys([]string{first.MsgID, "compat-key-0"})
	if res, err := prod.SendSync(context.Background(), tm); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send the trace record: %v %v", res, err)
	}
	col := newCollector()
	startPushConsumer(t, newPushConsumer(t, p, group), topic, consumer.MessageSelector{}, col, "m")
	if !col.waitUntil(60*time.Second, func(c *collector) bool { return len(c.all) >= 3 }) {
		t.Fatal("the fixture consumer did not receive the 3 messages in 60 s")
	}
	awaitRunningInfo(t, p, group) // consumerStatus: the Go client can describe itself (its NaN rates before)

	dir := t.TempDir()
	for name, body := range map[string]string{
		"topics.json": `[{"topicName":"CompatListTopic","readQueueNums":2,"writeQueueNums":2,"perm":6}]`,
		"groups.json": `[{"groupName":"CompatListGroup"}]`,
		"broker.conf": "brokerName=compat-extra\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	brokerName := first.MessageQueue.BrokerName
	vars := map[string]string{
		"{ns}": p.nsAddr, "{broker}": p.brAddr, "{cluster}": "DefaultCluster", "{brokerName}": brokerName,
		"{topic}": topic, "{group}": group, "{dir}": dir, "{offsetGroup}": "CompatOffsetGroup",
		"{msgId}": first.MsgID, "{offsetMsgId}": first.OffsetMsgID,
		"{queue}": strconv.Itoa(first.MessageQueue.QueueId), "{offset}": strconv.FormatInt(first.QueueOffset, 10),
	}

	b := startMQAdmin(t)
	defer b.close()
	listed := mqadminList(t, b)
	var names []string
	for _, c := range mqadminCommands {
		names = append(names, c.name)
	}
	for _, n := range listed {
		if !slices.Contains(names, n) {
			t.Errorf("mqadmin lists %s, which the compatibility run does not run: add it to mqadminCommands", n)
		}
	}
	for _, n := range names {
		if !slices.Contains(listed, n) {
			t.Errorf("mqadminCommands runs %s, which mqadmin does not list", n)
		}
	}

	var results []mqadminResult
	before := requestCounts(t, httpAddr)
	for _, c := range mqadminCommands {
		args := []string{c.name}
		for _, w := range strings.Fields(c.args) {
			for k, v := range vars {
				w = strings.ReplaceAll(w, k, v)
			}
			args = append(args, w)
		}
		secs := mqadminTimeout
		if c.loops {
			secs = mqadminLoopTimeout
		}
		out, status := b.run(t, secs, args)
		after := requestCounts(t, httpAddr)
		codes, unserved := diffCodes(before, after)
		r := classify(c, out, status, unserved)
		r.codes = codes
		before = after
		results = append(results, r)
	}

	table := renderMQAdminTable(results)
	doc, err := os.ReadFile(compatDoc)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	updated, err := replaceBetween(string(doc), mqadminBegin, mqadminEnd, table)
	if os.Getenv(updateCompatEnv) == "1" {
		if err != nil {
			t.Fatalf("%s: %v", compatDoc, err)
		}
		if err := os.WriteFile(compatDoc, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", compatDoc)
	} else {
		// The statuses must match; the codes and answers are what one
		// run saw (a command's background traffic may vary).
		recorded := tableStatuses(string(doc))
		for _, r := range results {
			if got := recorded[r.cmd.name]; got != r.status {
				t.Errorf("docs/compatibility.md says mqadmin %s %s, the run found %s %s (rerun with %s=1 to rewrite the table, and read the diff)",
					r.cmd.name, cmp.Or(got, "nothing"), r.status, r.why, updateCompatEnv)
			}
		}
		if len(recorded) != len(results) {
			t.Errorf("docs/compatibility.md lists %d mqadmin commands, the run ran %d (rerun with %s=1)", len(recorded), len(results), updateCompatEnv)
		}
	}
	for _, r := range results {
		if r.cmd.name == "queryMsgTraceById" && !strings.Contains(r.out, "CompatProducer") {
			t.Errorf("mqadmin queryMsgTraceById does not show the trace record's producer group:\n%s", tail(r.out, 3000))
		}
		if slices.Contains(mqadminMustWork, r.cmd.name) && r.status != "works" {
			t.Errorf("mqadmin %s %s: %s %s\n%s", r.cmd.name, r.cmd.args, r.status, r.why, tail(r.out, 3000))
		}
	}
}

// mqadminBatch is a running petrel.interop.MQAdminBatch.
type mqadminBatch struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errs *lockedBuffer
}

func startMQAdmin(t *testing.T) *mqadminBatch {
	t.Helper()
	cp := javaClasspath(t, "mqadmin")
	cmd := exec.Command("java", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Drocketmq.client.logRoot="+t.TempDir(), "-cp", cp, "petrel.interop.MQAdminBatch")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &mqadminBatch{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), errs: &lockedBuffer{}}
	cmd.Stderr = b.errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *mqadminBatch) close() {
	b.in.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}

// run runs one command line for at most seconds and returns what it
// printed and done or timeout.
func (b *mqadminBatch) run(t *testing.T, seconds int, args []string) (string, string) {
	t.Helper()
	if _, err := io.WriteString(b.in, strconv.Itoa(seconds)+"\t"+strings.Join(args, "\t")+"\n"); err != nil {
		t.Fatalf("mqadmin batch: %v\n%s", err, tail(b.errs.String(), 3000))
	}
	var out string
	for {
		line, err := b.out.ReadString('\n')
		if err != nil {
			t.Fatalf("mqadmin batch ended during %s: %v\n%s", args[0], err, tail(b.errs.String(), 3000))
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "@@OUT "):
			raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, "@@OUT "))
			if err != nil {
				t.Fatal(err)
			}
			out = string(raw)
		case strings.HasPrefix(line, "@@END "):
			return out, strings.Fields(line)[1]
		}
	}
}

// mqadminList is the command names mqadmin prints without arguments.
func mqadminList(t *testing.T, b *mqadminBatch) []string {
	out, _ := b.run(t, mqadminTimeout, []string{"@@NOARGS"})
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "   ") {
			if f := strings.Fields(l); len(f) > 0 {
				names = append(names, f[0])
			}
		}
	}
	if len(names) < 50 {
		t.Fatalf("mqadmin listed %d commands:\n%s", len(names), out)
	}
	return names
}

var requestSeries = regexp.MustCompile(`^petrel_remoting_requests_total\{code="(-?\d+)",served="(true|false)"\} (\S+)$`)

// requestCount is one code's series: how many, and whether the broker
// serves it.
type requestCount struct {
	n      float64
	served bool
}

// requestCounts scrapes the broker's petrel_remoting_requests_total.
func requestCounts(t *testing.T, httpAddr string) map[int32]requestCount {
	t.Helper()
	_, body := httpGet(t, "http://"+httpAddr+"/metrics")
	out := map[int32]requestCount{}
	for _, l := range strings.Split(body, "\n") {
		if m := requestSeries.FindStringSubmatch(l); m != nil {
			code, _ := strconv.Atoi(m[1])
			v, _ := strconv.ParseFloat(m[3], 64)
			out[int32(code)] = requestCount{v, m[2] == "true"}
		}
	}
	return out
}

// background is what the fixtures send on their own between commands
// (heartbeats, pulls, offset commits, rebalance queries): not the
// command's.
var background = map[int32]bool{11: true, 14: true, 15: true, 34: true, 35: true, 38: true, 41: true, 42: true}

// diffCodes lists the codes received between two scrapes, and those of
// them the broker does not serve.
func diffCodes(before, after map[int32]requestCount) (codes, unserved []int32) {
	for c, n := range after {
		if n.n > before[c].n && !background[c] {
			codes = append(codes, c)
			if !n.served {
				unserved = append(unserved, c)
			}
		}
	}
	slices.Sort(codes)
	slices.Sort(unserved)
	return codes, unserved
}

var (
	descLine    = regexp.MustCompile(`CODE: (-?\d+)\s+DESC: ([^\n]*)`)
	causedBy    = regexp.MustCompile(`(?m)^Caused by: ([^\n]*)`)
	addrPattern = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)
	longNumber  = regexp.MustCompile(`\d{5,}`)
)

// classify reads what a command printed; unserved are the codes it sent
// that the broker answered REQUEST_CODE_NOT_SUPPORTED.
func classify(c mqadminCommand, out, status string, unserved []int32) mqadminResult {
	r := mqadminResult{cmd: c, out: out, status: "works"}
	switch {
	case status == "timeout" && !c.loops:
		r.status, r.why = "refused", fmt.Sprintf("no answer within %d s", mqadminTimeout)
	case strings.Contains(out, "command failed") || strings.Contains(out, "Exception"):
		r.status = "refused"
		if m := descLine.FindAllStringSubmatch(out, -1); m != nil {
			last := m[len(m)-1]
			r.why = "code " + last[1] + ": " + strings.TrimSpace(strings.SplitN(last[2], ", For more information", 2)[0])
		} else if m := causedBy.FindAllStringSubmatch(out, -1); m != nil {
			r.why = m[len(m)-1][1]
		} else {
			r.why = strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]
		}
	}
	if r.status == "works" && len(unserved) > 0 {
		var codes []string
		for _, u := range unserved {
			codes = append(codes, strconv.Itoa(int(u)))
		}
		r.status, r.why = "partly", "printed without an error, but request code "+strings.Join(codes, ", ")+" was answered not supported"
	}
	if c.local {
		r.status, r.why = "local", "reads local RocksDB or compaction files only; no server is asked"
	}
	r.why = longNumber.ReplaceAllString(addrPattern.ReplaceAllString(r.why, "ADDR"), "N")
	r.why = strings.ReplaceAll(r.why, "|", `\|`)
	if len(r.why) > 160 {
		r.why = r.why[:160] + "…"
	}
	return r
}

func renderMQAdminTable(results []mqadminResult) string {
	var b strings.Builder
	works := 0
	for _, r := range results {
		if r.status == "works" {
			works++
		}
	}
	fmt.Fprintf(&b, "%d of %d commands work.\n\n", works, len(results))
	b.WriteString("| command | status | request codes the broker received | what mqadmin printed |\n|---|---|---|---|\n")
	for _, r := range results {
		var codes []string
		for _, c := range r.codes {
			codes = append(codes, strconv.Itoa(int(c)))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.cmd.name, r.status, strings.Join(codes, ", "), r.why)
	}
	return b.String()
}

// tableStatuses reads the command and status columns of the mqadmin
// table in doc.
func tableStatuses(doc string) map[string]string {
	out := map[string]string{}
	i, j := strings.Index(doc, mqadminBegin), strings.Index(doc, mqadminEnd)
	if i < 0 || j < i {
		return out
	}
	for _, l := range strings.Split(doc[i:j], "\n") {
		f := strings.Split(l, " | ")
		if len(f) >= 2 && strings.HasPrefix(l, "| ") && f[1] != "status" && !strings.HasPrefix(f[1], "-") {
			out[strings.TrimPrefix(f[0], "| ")] = f[1]
		}
	}
	return out
}

// replaceBetween puts body between the begin and end markers of doc (a
// new doc of both markers when doc is empty).
func replaceBetween(doc, begin, end, body string) (string, error) {
	if doc == "" {
		return begin + "\n" + body + end + "\n", nil
	}
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("the markers %q and %q are missing", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}
