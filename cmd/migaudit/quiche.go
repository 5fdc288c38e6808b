package main

// The quiche live harness (quiche 0.18.0 through its Node-API binding)
// registers itself with harnesses/run for `migaudit run --impl quiche`.
import _ "github.com/migaudit/migaudit/harnesses/quiche"
