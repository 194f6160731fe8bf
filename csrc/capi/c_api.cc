// stub, replaced by the runtime work
