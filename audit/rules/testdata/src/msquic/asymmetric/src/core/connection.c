QUIC_STATUS
QuicConnParamSet(
    _In_ QUIC_CONNECTION* Connection,
    _In_ uint32_t Param,
    _In_ uint32_t BufferLength,
    _In_reads_bytes_(BufferLength) const void* Buffer
    )
{
    QUIC_STATUS Status;
    switch (Param) {
    case QUIC_PARAM_CONN_LOCAL_ADDRESS: {
        if (QuicConnIsServer(Connection)) {
            Status = QUIC_STATUS_INVALID_STATE;
            break;
        }
        CxPlatCopyMemory(&Connection->Paths[0].Route.LocalAddress, Buffer, sizeof(QUIC_ADDR));
        Status =
            QuicLibraryGetBinding(
                &UdpConfig,
                &Connection->Paths[0].Binding);
        Status = QUIC_STATUS_SUCCESS;
        break;
    }
    default:
        Status = QUIC_STATUS_INVALID_PARAMETER;
        break;
    }
    return Status;
}

BOOLEAN
QuicConnRecvFrames(
    _In_ QUIC_CONNECTION* Connection,
    _In_ QUIC_PATH* Path
    )
{
    switch (FrameType) {
    case QUIC_FRAME_PATH_RESPONSE: {
        for (uint8_t i = 0; i < Connection->PathsCount; ++i) {
            QUIC_PATH* TempPath = &Connection->Paths[i];
            if (!memcmp(Frame.Data, TempPath->Challenge, sizeof(Frame.Data))) {
                QuicPathSetValid(Connection, TempPath, QUIC_PATH_VALID_PATH_RESPONSE);
                break;
            }
        }
        break;
    }
    }
    return TRUE;
}
