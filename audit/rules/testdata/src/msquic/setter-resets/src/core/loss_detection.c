void
QuicLossDetectionProcessAckBlocks(
    _In_ QUIC_LOSS_DETECTION* LossDetection,
    _In_ QUIC_PATH* Path
    )
{
    BOOLEAN NewLargestAckDifferentPath = FALSE;
    NewLargestAckDifferentPath = Path->ID != LargestAckedPacket->PathId;
    if (NewLargestAckRetransmittable && !NewLargestAckDifferentPath) {
        QuicConnUpdateRtt(Connection, Path, SmallestRtt);
    }
}
