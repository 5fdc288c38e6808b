typedef struct QUIC_ACK_EVENT {
    uint64_t TimeNow;
    uint32_t NumRetransmittableBytes;
    BOOLEAN IsImplicit;
} QUIC_ACK_EVENT;
