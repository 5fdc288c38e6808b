QUIC_STATUS
QuicConnParamSet(
    _In_ QUIC_CONNECTION* Connection,
    _In_ uint32_t Param
    )
{
    switch (Param) {
    case QUIC_PARAM_CONN_LOCAL_ADDRESS: {
        CxPlatCopyMemory(&Connection->Paths[0].Route.LocalAddress, Buffer, sizeof(QUIC_ADDR));
        QuicCongestionControlReset(&Connection->CongestionControl, TRUE);
        break;
    }
    }
    return QUIC_STATUS_SUCCESS;
}

BOOLEAN
QuicConnRecvFrames(
    _In_ QUIC_CONNECTION* Connection
    )
{
    switch (FrameType) {
    case QUIC_FRAME_PATH_RESPONSE: {
        QuicPathSetValid(Connection, TempPath, QUIC_PATH_VALID_PATH_RESPONSE);
        break;
    }
    }
    return TRUE;
}
