# make image-test: build the Dockerfile's `agent` and `webhook` targets with buildah and run
# it with podman (tests/image/run.sh says what and how). Needs root,
# buildah, podman, runc and mmdebstrap; installs nothing. Its state (base
# rootfs tarballs, the container storage) stays in build/image between runs;
# make image-clean removes it.
.PHONY: image-test image-clean

image-test:
	tests/image/run.sh

image-clean:
	-podman --root $(CURDIR)/build/image/storage --runroot $(CURDIR)/build/image/run \
	    --storage-driver vfs \
	    system reset --force >/dev/null 2>&1
	rm -rf build/image
