package main

// The quicly live harness registers itself with harnesses/run.
import _ "github.com/migaudit/migaudit/harnesses/quicly"
