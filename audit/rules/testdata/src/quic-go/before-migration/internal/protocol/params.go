package protocol

const InitialPacketSizeIPv4 = 1252

const InitialPacketSizeIPv6 = 1232
