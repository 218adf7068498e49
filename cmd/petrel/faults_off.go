//go:build !verifyfault

package main

import "io"

// printTestFaults prints nothing: this binary has no test faults (the
// build tag verifyfault builds them in; see faults_verifyfault.go).
func printTestFaults(io.Writer) {}
