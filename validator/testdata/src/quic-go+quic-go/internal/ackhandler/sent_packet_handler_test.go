package ackhandler

func testIt() { h.MigratedPath(1, 2) }
