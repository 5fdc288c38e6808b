void
QuicLossDetectionDetectAndHandleLostPackets(
    _In_ QUIC_LOSS_DETECTION* LossDetection,
    _In_ uint32_t TimeNow
    )
{
    if (LostRetransmittableBytes > 0) {
        const QUIC_PATH* Path = &Connection->Paths[0]; // TODO - Correct?
        QuicCongestionControlOnDataLost(&Connection->CongestionControl, &LossEvent);
    }
}

void
QuicLossDetectionProcessAckBlocks(
    _In_ QUIC_LOSS_DETECTION* LossDetection,
    _In_ QUIC_PATH* Path
    )
{
    BOOLEAN NewLargestAckDifferentPath = FALSE;
    if (LargestAckedPacket != NULL) {
        NewLargestAckDifferentPath = Path->ID != LargestAckedPacket->PathId;
    }
    if (NewLargestAckRetransmittable && !NewLargestAckDifferentPath) {
        QuicConnUpdateRtt(Connection, Path, SmallestRtt);
    }
}
