// Empty: the link-check libraries of cmake/NanomxLayer.cmake take all their code from one
// layer's archive (whole-archive), so that an undefined symbol names a missing dependency.
