package protocol

const InitialPacketSize = 1280
