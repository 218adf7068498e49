package interop

// TLS on the remoting ports (issue 18): with --tls-mode enforcing the
// official 4.x client with producer.WithTls(true) / consumer.WithTls(true)
// (which dials TLS without verifying) and the 5.x client (always TLS, to
// the gRPC endpoint, which serves --tls-cert too) work and a plaintext
// 4.x client is refused; permissive serves both on the same ports. The
// server's certificate is made here, signed by a test CA the CLI is given
// with --tls-ca (this module does not import Petrel's tlsxtest: it would
// bring Petrel's dependencies into the clients' module graph).
//
// The 4.x client's WithTls sets a field of a configuration all its
// clients in a process share (remote.DefaultRemotingClientConfig, v2.1.3):
// one TLS client makes every later connection of the process TLS, and
// the write races with the other clients' dials. So the 4.x TLS clients
// run in a child process (runTLSChild); the tests' own 4.x clients stay
// plaintext.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// tlsFiles are a server certificate for 127.0.0.1 and localhost, its key
// and the CA that signed it, as PEM files.
type tlsFiles struct {
	cert, key, ca string
}

// makeTLSFiles writes a CA and a server certificate signed by it into a
// temporary directory.
func makeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "petrel interop CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "petrel interop server"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := tlsFiles{cert: filepath.Join(dir, "server.crt"), key: filepath.Join(dir, "server.key"), ca: filepath.Join(dir, "ca.crt")}
	for path, block := range map[string]*pem.Block{
		f.ca:   {Type: "CERTIFICATE", Bytes: caDER},
		f.cert: {Type: "CERTIFICATE", Bytes: der},
		f.key:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// startTLSPetrel starts a server with --tls-mode mode and the files, and
// more flags; the CLI dials it with --tls --tls-ca when mode is enforcing.
func startTLSPetrel(t *testing.T, mode string, f tlsFiles, extra ...string) *secured {
	t.Helper()
	args := append([]string{"--tls-mode", mode, "--tls-cert", f.cert, "--tls-key", f.key}, extra...)
	s := &secured{petrel: startPetrel(t, serverOptions{extraArgs: args})}
	if mode == "enforcing" {
		s.cliTLS = []string{"--tls", "--tls-ca", f.ca}
	}
	return s
}

// queryRouteTLS is queryRoute over TLS (verified against the CA).
func queryRouteTLS(nsAddr, caFile, topic string) (route *topicRoute, found bool, err error) {
	pemCA, err := os.ReadFile(caFile)
	if err != nil {
		return nil, false, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", nsAddr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, false, err
	}
	c := &rawClient{conn: nc}
	defer c.Close()
	resp, err := c.call(reqGetRouteByTopic, map[string]string{"topic": topic}, nil, 5*time.Second)
	if err != nil {
		return nil, false, err
	}
	return routeFromAnswer(topic, resp)
}

func waitRouteTLS(t *testing.T, s *secured, f tlsFiles, topic string) {
	t.Helper()
	waitFor(t, authTimeout, "a route for "+topic+" over TLS", func() (bool, string) {
		r, found, err := queryRouteTLS(s.nsAddr, f.ca, topic)
		switch {
		case err != nil:
			return false, err.Error()
		case !found || r.readQueues() == 0:
			return false, "no readable route yet"
		}
		return true, ""
	})
}

// tlsChildEnv makes the test binary a child running 4.x clients with
// WithTls(true) (see the file comment): a producer that sends the
// comma-separated bodies of INTEROP_SEND to INTEROP_TOPIC and, when
// INTEROP_GROUP is set, a push consumer of that group on the topic, both
// signing with INTEROP_AK / INTEROP_SK when set. It reports on stdout:
//
//	STARTED          the clients started
//	SENT <body>      a send was acknowledged with SEND_OK
//	SENDERR <text>   a send failed
//	M <body>         the consumer got a message
//	ERROR <text>     a client could not start
//
// and shuts the clients down when its stdin closes.
const tlsChildEnv = "PETREL_INTEROP_TLS_CHILD"

// The child is dispatched before TestMain runs.
func init() {
	if os.Getenv(tlsChildEnv) != "" {
		rlog.SetLogLevel("error")
		os.Exit(runTLSChild())
	}
}

func runTLSChild() int {
	ns, topic, group := os.Getenv("INTEROP_NS"), os.Getenv("INTEROP_TOPIC"), os.Getenv("INTEROP_GROUP")
	cred := primitive.Credentials{AccessKey: os.Getenv("INTEROP_AK"), SecretKey: os.Getenv("INTEROP_SK")}
	emit := childEmitter()
	resolver := primitive.NewPassthroughResolver([]string{ns})
	// Both clients are made before either starts: WithTls writes the
	// shared configuration their goroutines read.
	prod, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithTls(true),
		producer.WithGroupName(topic+"_tlspg"), producer.WithInstanceName(topic+"_tlspi"),
		producer.WithCredentials(cred), producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		emit("ERROR new producer: %v", err)
		return 1
	}
	var pc rocketmq.PushConsumer
	if group != "" {
		pc, err = rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver), consumer.WithTls(true),
			consumer.WithGroupName(group), consumer.WithInstance(group+"_tls"), consumer.WithCredentials(cred),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithPullInterval(0))
		if err != nil {
			emit("ERROR new consumer: %v", err)
			return 1
		}
		err = pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				emit("M %s", m.Body)
			}
			return consumer.ConsumeSuccess, nil
		})
		if err != nil {
			emit("ERROR subscribe: %v", err)
			return 1
		}
	}
	if err := prod.Start(); err != nil {
		emit("ERROR start producer: %v", err)
		return 1
	}
	if pc != nil {
		if err := pc.Start(); err != nil {
			emit("ERROR start consumer: %v", err)
			return 1
		}
	}
	emit("STARTED")
	for _, b := range strings.Split(os.Getenv("INTEROP_SEND"), ",") {
		if b == "" {
			continue
		}
		if err := send4(prod, topic, b); err != nil {
			emit("SENDERR %s", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		emit("SENT %s", b)
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	if pc != nil {
		pc.Suspend()
		_ = pc.Shutdown()
	}
	_ = prod.Shutdown()
	return 0
}

// tlsChild is what a TLS child reported.
type tlsChild struct {
	mu       sync.Mutex
	changed  chan struct{}
	sent     map[string]bool
	sendErrs []string
	got      map[string]bool
}

// startTLSChild starts a TLS child (runTLSChild) against p: it sends
// sends to topic, consumes topic as group unless group is "", and signs
// with user/secret unless user is "". Stopped when the test ends.
func startTLSChild(t *testing.T, p *petrel, topic, group string, sends []string, user, secret string) *tlsChild {
	t.Helper()
	c := &tlsChild{changed: make(chan struct{}), sent: map[string]bool{}, got: map[string]bool{}}
	startLineChild(t, "4.x TLS client child", func(line string) {
		kind, rest, _ := strings.Cut(line, " ")
		c.mu.Lock()
		defer c.mu.Unlock()
		switch kind {
		case "SENT":
			c.sent[rest] = true
		case "SENDERR":
			c.sendErrs = append(c.sendErrs, rest)
		case "M":
			c.got[rest] = true
		default:
			return
		}
		close(c.changed)
		c.changed = make(chan struct{})
	}, tlsChildEnv+"=1", "INTEROP_NS="+p.nsAddr, "INTEROP_TOPIC="+topic, "INTEROP_GROUP="+group,
		"INTEROP_SEND="+strings.Join(sends, ","), "INTEROP_AK="+user, "INTEROP_SK="+secret)
	return c
}

// wait waits until cond holds (c locked) or fails the test with what.
func (c *tlsChild) wait(t *testing.T, what string, cond func(c *tlsChild) bool) {
	t.Helper()
	deadline := time.NewTimer(authTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok, ch := cond(c), c.changed
		state := fmt.Sprintf("sent %d, send errors %q, consumed %d", len(c.sent), c.sendErrs, len(c.got))
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("the 4.x TLS child: timed out after %v waiting for %s (%s)", authTimeout, what, state)
		}
	}
}

// noSendErrors fails the test if a send of the child failed.
func (c *tlsChild) noSendErrors(t *testing.T, what string) {
	t.Helper()
	c.mu.Lock()
	errs := c.sendErrs
	c.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%s: %s", what, errs[0])
	}
}

// all reports whether set holds every body of want.
func all(set map[string]bool, want []string) bool {
	for _, b := range want {
		if !set[b] {
			return false
		}
	}
	return true
}

// TestTLSEnforcing: the 4.x producer and push consumer with WithTls(true)
// and the 5.x producer and simple consumer work; a plaintext 4.x
// producer, a plaintext remoting request and the CLI without --tls are
// refused, at once.
func TestTLSEnforcing(t *testing.T) {
	t.Parallel()
	f := makeTLSFiles(t)
	s := startTLSPetrel(t, "enforcing", f)
	topic, topic5 := uniqueName(t, "t"), uniqueName(t, "t5")
	s.mustCLI(t, "topic", "create", topic, "--queues", "4")
	s.mustCLI(t, "topic", "create", topic5, "--queues", "4")
	waitRouteTLS(t, s, f, topic)

	want := bodies(t, "m", 5)
	child := startTLSChild(t, s.petrel, topic, uniqueName(t, "cg"), want, "", "")
	child.wait(t, "every send acknowledged and consumed over TLS", func(c *tlsChild) bool {
		return len(c.sendErrs) > 0 || all(c.sent, want) && all(c.got, want)
	})
	child.noSendErrors(t, "4.x send over TLS")

	// A plaintext 4.x producer gets no route: the name server closes its
	// connection (the client then waits out its own timeouts, so no
	// retries here).
	plain := newProducer(t, s.petrel, producer.WithRetry(0))
	start := time.Now()
	err := send4(plain, topic, "plaintext")
	if err == nil {
		t.Fatal("a plaintext 4.x producer's send was accepted by an enforcing server")
	}
	t.Logf("plaintext 4.x producer, after %v: %v", time.Since(start), err)
	// The servers close a plaintext connection at once.
	start = time.Now()
	if _, _, err := queryRoute(s.nsAddr, topic); err == nil {
		t.Fatal("a plaintext route request was answered by an enforcing name server")
	}
	if _, err := rawCall(s.brAddr, reqGetRouteByTopic, map[string]string{"topic": topic}, 5*time.Second); err == nil {
		t.Fatal("a plaintext request was answered by an enforcing broker")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("plaintext requests were refused only after %v: the connection should close at once", d)
	}
	plainCLI := &secured{petrel: s.petrel}
	stderr := plainCLI.refusedCLI(t, nil, "topic", "list")
	t.Logf("CLI without --tls: %s", strings.TrimSpace(stderr))

	prod5, err := startProducer5(t, rmq5Config(s.petrel, ""), topic5)
	if err != nil {
		t.Fatalf("start the 5.x producer: %v", err)
	}
	want5 := bodies(t, "g", 3)
	for _, b := range want5 {
		if err := send5err(prod5, topic5, b); err != nil {
			t.Fatalf("5.x send: %v", err)
		}
	}
	sc, err := startSimple5(t, rmq5Config(s.petrel, uniqueName(t, "g")), topic5)
	if err != nil {
		t.Fatalf("start the 5.x simple consumer: %v", err)
	}
	got := map[string]bool{}
	receiveUntil(t, sc, 16, 20*time.Second, "the 5.x simple consumer to receive every message", func(mv *rmq.MessageView) {
		got[string(mv.GetBody())] = true
		ack5(t, sc, mv)
	}, func() bool { return len(got) == len(want5) })
}

// TestTLSPermissive: TLS and plaintext 4.x clients on the same ports,
// both producing to one topic that a plaintext consumer and a TLS
// consumer read whole; the CLI works both ways.
func TestTLSPermissive(t *testing.T) {
	t.Parallel()
	f := makeTLSFiles(t)
	s := startTLSPetrel(t, "permissive", f)
	topic := uniqueName(t, "t")
	s.mustCLI(t, "topic", "create", topic, "--queues", "4") // plaintext CLI
	secure := &secured{petrel: s.petrel, cliTLS: []string{"--tls", "--tls-ca", f.ca}}
	if out := secure.mustCLI(t, "topic", "list"); !strings.Contains(out, topic) {
		t.Fatalf("petrel topic list over TLS does not list %s:\n%s", topic, out)
	}
	waitRoute(t, s.nsAddr, topic)
	waitRouteTLS(t, s, f, topic)

	viaTLS, viaPlain := bodies(t, "tls", 3), bodies(t, "plain", 3)
	child := startTLSChild(t, s.petrel, topic, uniqueName(t, "cg"), viaTLS, "", "")
	plainProd := newProducer(t, s.petrel)
	for _, b := range viaPlain {
		if err := send4(plainProd, topic, b); err != nil {
			t.Fatalf("4.x plaintext send to a permissive server: %v", err)
		}
	}
	everything := append(append([]string{}, viaTLS...), viaPlain...)
	child.wait(t, "the TLS sends acknowledged and everything consumed over TLS", func(c *tlsChild) bool {
		return len(c.sendErrs) > 0 || all(c.sent, viaTLS) && all(c.got, everything)
	})
	child.noSendErrors(t, "4.x send over TLS to a permissive server")
	consume4(t, s.petrel, topic).waitAll(t, authTimeout, "plaintext push consumer", everything)
}

// TestTLSEnforcingWithAuth: both at once, as in production: the 4.x
// client over TLS with the super user's credentials works, with a wrong
// secret it is refused with code 16; the CLI with --tls and credentials
// manages users; the signed 5.x producer works.
func TestTLSEnforcingWithAuth(t *testing.T) {
	t.Parallel()
	f := makeTLSFiles(t)
	s := startTLSPetrel(t, "enforcing", f, "--auth", "--auth-init-user", adminUser+":"+adminSecret)
	topic := uniqueName(t, "t")
	s.createTopicsAs(t, topic)
	s.mustCLI(t, append([]string{"user", "create", "bob", "--secret", "bob-secret-7"}, creds(adminUser, adminSecret)...)...)
	if out := s.mustCLI(t, append([]string{"user", "list"}, creds(adminUser, adminSecret)...)...); !strings.Contains(out, "bob") {
		t.Fatalf("petrel user list over TLS does not list bob:\n%s", out)
	}
	waitRouteTLS(t, s, f, topic)

	good := bodies(t, "m", 2)
	signed := startTLSChild(t, s.petrel, topic, uniqueName(t, "cg"), good, adminUser, adminSecret)
	signed.wait(t, "signed sends over TLS acknowledged and consumed", func(c *tlsChild) bool {
		return len(c.sendErrs) > 0 || all(c.sent, good) && all(c.got, good)
	})
	signed.noSendErrors(t, "signed 4.x send over TLS")
	wrong := startTLSChild(t, s.petrel, topic, "", []string{"wrong"}, adminUser, "not-the-secret")
	wrong.wait(t, "the send with a wrong secret answered", func(c *tlsChild) bool {
		return c.sent["wrong"] || len(c.sendErrs) > 0
	})
	wrong.mu.Lock()
	accepted, refusal := wrong.sent["wrong"], strings.Join(wrong.sendErrs, "; ")
	wrong.mu.Unlock()
	if accepted || !strings.Contains(refusal, "CODE: 16") {
		t.Fatalf("send over TLS with a wrong secret: %s, want a refusal with code 16", refusal)
	}
	prod5, err := startProducer5(t, config5(s.petrel, "", adminUser, adminSecret), topic)
	if err != nil {
		t.Fatalf("start the signed 5.x producer: %v", err)
	}
	if err := send5err(prod5, topic, "5x signed"); err != nil {
		t.Fatalf("signed 5.x send: %v", err)
	}
}
