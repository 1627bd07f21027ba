# The tutorial's clean-up step, as published (written by `flexq tutorial init`). Only the `flexq env` line is flexq's.
set -euo pipefail
eval "$(flexq env)"
export PROJECT_ID=$(gcloud config get project)
export ZONE="us-east5-b"
export CLUSTER_NAME="tpu-cluster"
gcloud container clusters delete ${CLUSTER_NAME} \
--location=${ZONE} \
--project=${PROJECT_ID} \
--quiet
