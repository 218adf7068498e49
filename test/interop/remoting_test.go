package interop

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// A tiny RocketMQ 4.x remoting client, written from the protocol brief
// (docs/remoting-protocol.md §1), for the requests the official Go client
// never sends (QUERY_MESSAGE) and for looking at server state (routes,
// committed offsets) without going through the client's caches.
//
// Frame: int32 frame length (bytes after this field), int32 with the
// serialisation type in the high byte and the header length in the low three
// bytes, the header, the body. Requests are sent with a JSON header; answers
// are accepted with a JSON or ROCKETMQ binary header.

// Request and response codes used by the tests.
const (
	codeSuccess            = 0
	codeTopicNotExist      = 17
	codeQueryNotFound      = 22
	reqQueryMessage        = 12
	reqQueryConsumerOffset = 14
	reqGetRouteByTopic     = 105
)

// remotingCommand is a decoded frame.
type remotingCommand struct {
	Code      int               `json:"code"`
	Language  json.RawMessage   `json:"language,omitempty"`
	Version   int               `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
	Body      []byte            `json:"-"`
}

type rawClient struct {
	conn   net.Conn
	opaque int32
}

func dialRaw(addr string) (*rawClient, error) {
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawClient{conn: c}, nil
}

func (c *rawClient) Close() error { return c.conn.Close() }

// call sends one request and returns the response with the same opaque,
// skipping anything else the server sends meanwhile.
func (c *rawClient) call(code int, ext map[string]string, body []byte, timeout time.Duration) (*remotingCommand, error) {
	c.opaque++
	req := struct {
		Code      int               `json:"code"`
		Language  string            `json:"language"`
		Version   int               `json:"version"`
		Opaque    int32             `json:"opaque"`
		Flag      int32             `json:"flag"`
		Remark    string            `json:"remark"`
		ExtFields map[string]string `json:"extFields"`
	}{code, "GO", 317, c.opaque, 0, "", ext}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	header, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 8, 8+len(header)+len(body))
	binary.BigEndian.PutUint32(frame[0:4], uint32(4+len(header)+len(body)))
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(header))) // serialisation type 0 = JSON
	frame = append(frame, header...)
	frame = append(frame, body...)

	if err := c.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(frame); err != nil {
		return nil, fmt.Errorf("write request %d: %w", code, err)
	}
	for {
		resp, err := readFrame(c.conn)
		if err != nil {
			return nil, fmt.Errorf("read answer to request %d: %w", code, err)
		}
		if resp.Flag&1 == 1 && resp.Opaque == c.opaque {
			return resp, nil
		}
	}
}

func readFrame(r io.Reader) (*remotingCommand, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("frame length %d out of range", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	ser := buf[0]
	hlen := int(binary.BigEndian.Uint32(buf[0:4]) & 0xFFFFFF)
	if 4+hlen > len(buf) {
		return nil, fmt.Errorf("header length %d exceeds frame length %d", hlen, n)
	}
	header, body := buf[4:4+hlen], buf[4+hlen:]
	var cmd *remotingCommand
	var err error
	switch ser {
	case 0:
		cmd = &remotingCommand{}
		if err = json.Unmarshal(header, cmd); err != nil {
			// The official client rejects such frames too, e.g. when an ext
			// value is not a JSON string (§1.3).
			return nil, fmt.Errorf("JSON header %q: %w", header, err)
		}
	case 1:
		cmd, err = decodeBinaryHeader(header)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown serialisation type %d", ser)
	}
	cmd.Body = body
	return cmd, nil
}

// decodeBinaryHeader decodes the ROCKETMQ binary header (§1.3).
func decodeBinaryHeader(h []byte) (*remotingCommand, error) {
	short := errors.New("ROCKETMQ binary header too short")
	if len(h) < 17 {
		return nil, short
	}
	cmd := &remotingCommand{
		Code:    int(int16(binary.BigEndian.Uint16(h[0:2]))),
		Version: int(int16(binary.BigEndian.Uint16(h[3:5]))),
		Opaque:  int32(binary.BigEndian.Uint32(h[5:9])),
		Flag:    int32(binary.BigEndian.Uint32(h[9:13])),
	}
	rl := int(int32(binary.BigEndian.Uint32(h[13:17])))
	h = h[17:]
	if rl < 0 || rl > len(h) {
		return nil, short
	}
	cmd.Remark, h = string(h[:rl]), h[rl:]
	if len(h) < 4 {
		return nil, short
	}
	el := int(int32(binary.BigEndian.Uint32(h[0:4])))
	h = h[4:]
	if el < 0 || el > len(h) {
		return nil, short
	}
	ext := h[:el]
	cmd.ExtFields = map[string]string{}
	for len(ext) > 0 {
		if len(ext) < 2 {
			return nil, short
		}
		kl := int(binary.BigEndian.Uint16(ext[0:2]))
		ext = ext[2:]
		if kl > len(ext) {
			return nil, short
		}
		k := string(ext[:kl])
		ext = ext[kl:]
		if len(ext) < 4 {
			return nil, short
		}
		vl := int(int32(binary.BigEndian.Uint32(ext[0:4])))
		ext = ext[4:]
		if vl < 0 || vl > len(ext) {
			return nil, short
		}
		cmd.ExtFields[k] = string(ext[:vl])
		ext = ext[vl:]
	}
	return cmd, nil
}

// rawCall dials addr, sends one request and closes the connection.
func rawCall(addr string, code int, ext map[string]string, timeout time.Duration) (*remotingCommand, error) {
	c, err := dialRaw(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.call(code, ext, nil, timeout)
}

// topicRoute is the part of a route answer (code 105) the tests look at.
type topicRoute struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// Java name servers write brokerAddrs with unquoted integer keys
// ({0:"ip:port"}); the Go client accepts that, so the tests do too.
var unquotedIntKey = regexp.MustCompile(`([{,])\s*(-?\d+)\s*:`)

// queryRoute asks the name server for the route of topic. found is false when
// the name server answers TOPIC_NOT_EXIST.
func queryRoute(nsAddr, topic string) (route *topicRoute, found bool, err error) {
	resp, err := rawCall(nsAddr, reqGetRouteByTopic, map[string]string{"topic": topic}, 5*time.Second)
	if err != nil {
		return nil, false, err
	}
	return routeFromAnswer(topic, resp)
}

// routeFromAnswer reads a name server's answer to a route request for
// topic; found is false when it is TOPIC_NOT_EXIST.
func routeFromAnswer(topic string, resp *remotingCommand) (route *topicRoute, found bool, err error) {
	switch resp.Code {
	case codeSuccess:
	case codeTopicNotExist:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("route of %s: code %d remark %q", topic, resp.Code, resp.Remark)
	}
	route = &topicRoute{}
	if err := json.Unmarshal(resp.Body, route); err != nil {
		fixed := unquotedIntKey.ReplaceAll(resp.Body, []byte(`$1"$2":`))
		if err2 := json.Unmarshal(fixed, route); err2 != nil {
			return nil, true, fmt.Errorf("route body of %s %q: %w", topic, resp.Body, err)
		}
	}
	return route, true, nil
}

// writeQueues is the number of writable queues in a route.
func (r *topicRoute) writeQueues() int {
	n := 0
	for _, q := range r.QueueDatas {
		if q.Perm&2 != 0 {
			n += q.WriteQueueNums
		}
	}
	return n
}

// readQueues is the number of readable queues in a route.
func (r *topicRoute) readQueues() int {
	n := 0
	for _, q := range r.QueueDatas {
		if q.Perm&4 != 0 {
			n += q.ReadQueueNums
		}
	}
	return n
}

// waitRoute waits until the name server has a route for topic with at least
// one readable queue, and returns it.
func waitRoute(t testing.TB, nsAddr, topic string) *topicRoute {
	t.Helper()
	var route *topicRoute
	waitFor(t, 20*time.Second, "a route for topic "+topic+" on the name server "+nsAddr, func() (bool, string) {
		r, found, err := queryRoute(nsAddr, topic)
		switch {
		case err != nil:
			return false, err.Error()
		case !found:
			return false, "name server answers TOPIC_NOT_EXIST"
		case r.readQueues() == 0:
			return false, fmt.Sprintf("route has no readable queue: %+v", r)
		}
		route = r
		return true, ""
	})
	return route
}

// committedOffset asks the broker for the committed offset of a group on one
// queue; -1 when none is stored.
func committedOffset(brAddr, group, topic string, queueID int) (int64, error) {
	resp, err := rawCall(brAddr, reqQueryConsumerOffset, map[string]string{
		"consumerGroup": group,
		"topic":         topic,
		"queueId":       strconv.Itoa(queueID),
		"bname":         "",
	}, 5*time.Second)
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case codeSuccess:
		v, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("committed offset ext %q: %w", resp.ExtFields["offset"], err)
		}
		return v, nil
	case codeQueryNotFound:
		return -1, nil
	default:
		return 0, fmt.Errorf("query consumer offset: code %d remark %q", resp.Code, resp.Remark)
	}
}

// maxOffset asks the broker for the max offset of a queue (GET_MAX_OFFSET).
func maxOffset(brAddr, topic string, queueID int) (int64, error) {
	resp, err := rawCall(brAddr, 30, map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID)}, 5*time.Second)
	if err != nil {
		return 0, err
	}
	if resp.Code != codeSuccess {
		return 0, fmt.Errorf("get max offset: code %d remark %q", resp.Code, resp.Remark)
	}
	return strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
}
