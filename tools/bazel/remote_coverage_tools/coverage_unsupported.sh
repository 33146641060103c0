#!/bin/sh
echo "zcoll: merged coverage reports are not available in the offline build" >&2
exit 1
