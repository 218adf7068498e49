package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// javaDir holds the Maven modules of the Java interop tests, one folder
// per module (java/<module>/pom.xml), each naming the official artifacts
// it needs; nothing of theirs is committed.
const javaDir = "java"

var javaBuilds sync.Map // module → *javaBuild

type javaBuild struct {
	once sync.Once
	cp   string
	err  string
}

// javaClasspath builds module once per run (mvn package, which downloads
// its dependencies from Maven Central on the first run) and returns the
// class path of its classes and dependencies.
func javaClasspath(t testing.TB, module string) string {
	t.Helper()
	v, _ := javaBuilds.LoadOrStore(module, &javaBuild{})
	b := v.(*javaBuild)
	b.once.Do(func() {
		mvn, err := exec.LookPath("mvn")
		if err != nil {
			b.err = "the Java interop tests need a JDK and Maven on PATH (apt-get install maven): " + err.Error()
			return
		}
		dir, err := filepath.Abs(filepath.Join(javaDir, module))
		if err != nil {
			b.err = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cpFile := filepath.Join(dir, "target", "classpath.txt")
		cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-DskipTests", "package",
			"dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = "building the Java module " + module + " (mvn package in test/interop/java/" + module + ") failed: " + err.Error() + "\n" + tail(string(out), 6000)
			return
		}
		deps, err := os.ReadFile(cpFile)
		if err != nil {
			b.err = err.Error()
			return
		}
		b.cp = filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	if b.err != "" {
		t.Fatal(b.err)
	}
	return b.cp
}

// runJava runs class of module with args and returns its stdout; a
// non-zero exit or a timeout fails the test with stdout and stderr's tail.
func runJava(t testing.TB, module, class string, timeout time.Duration, args ...string) []byte {
	t.Helper()
	return runJavaWith(t, nil, module, class, timeout, args...)
}

// runJavaWith is runJava with more JVM options (system properties).
func runJavaWith(t testing.TB, jvm []string, module, class string, timeout time.Duration, args ...string) []byte {
	t.Helper()
	cp := javaClasspath(t, module)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	all := append([]string{"-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, jvm...)
	cmd := exec.CommandContext(ctx, "java", append(append(all, "-cp", cp, class), args...)...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java %s %s: %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, tail(string(out), 4000), tail(stderr.String(), 6000))
	}
	return out
}
