"""The archive stage: copy rotated binlog files to object storage, byte for byte, with manifests."""
