# The commands of Google's tutorial "Optimize AI training on TPUs with DWS and Kueue", exactly as published,
# against the twin `flexq up` started (written by `flexq tutorial init`; run it in the folder it wrote, or type
# its commands one by one). Only the lines marked `# flexq` are flexq's; the tutorial's `helm install kueue` is
# not needed: Kueue is installed in the twin.
set -euo pipefail
eval "$(flexq env)"  # flexq

export PROJECT_ID=$(gcloud config get project)
export PROJECT_NUMBER=$(gcloud projects describe ${PROJECT_ID} --format="value(projectNumber)")
export ZONE="us-east5-b"
export REGION="us-east5"
export CLUSTER_NAME="tpu-cluster"
export GKE_VERSION="1.34"
export ONDEMAND_NODEPOOL="on-demand-pool"
export DWS_NODEPOOL="dws-pool"

gcloud container clusters create ${CLUSTER_NAME} \
  --cluster-version=${GKE_VERSION} \
  --machine-type=n2-standard-16 \
  --location=${ZONE} \
  --enable-image-streaming \
  --addons=RayOperator \
  --project=${PROJECT_ID}

gcloud container clusters get-credentials ${CLUSTER_NAME} \
  --location=${ZONE} \
  --project=${PROJECT_ID}

gcloud container node-pools create ${ONDEMAND_NODEPOOL} \
  --cluster=${CLUSTER_NAME} \
  --location=${ZONE} \
  --machine-type=ct6e-standard-4t \
  --tpu-topology=4x4 \
  --reservation-affinity=none \
  --enable-autoscaling \
  --num-nodes=0 \
  --min-nodes=0 \
  --max-nodes=4

gcloud container node-pools create ${DWS_NODEPOOL} \
  --cluster=${CLUSTER_NAME} \
  --location=${ZONE} \
  --machine-type=ct6e-standard-4t \
  --tpu-topology=4x4 \
  --reservation-affinity=none \
  --enable-autoscaling \
  --enable-queued-provisioning \
  --flex-start \
  --num-nodes=0 \
  --min-nodes=0 \
  --max-nodes=4

gcloud container node-pools describe ${DWS_NODEPOOL} \
  --cluster=${CLUSTER_NAME} \
  --location=${ZONE} \
  --format="get(config.flexStart)"

# flexq: the tutorial's dws-tpu-queue.yaml is kueue.x-k8s.io/v1beta1, which Kueue 0.20 and later (what its
# unpinned `helm install` gives today, and the twin's default) no longer serve: there `kubectl apply` fails with
# `no matches for kind "ResourceFlavor" in version "kueue.x-k8s.io/v1beta1"`. So the same objects are applied
# from dws-tpu-queue.v1beta2.yaml (`flexq convert dws-tpu-queue.yaml`) when the cluster does not serve v1beta1.
kubectl api-versions | grep -qx kueue.x-k8s.io/v1beta1 || KUEUE_V1BETA2=1  # flexq
if [ -n "${KUEUE_V1BETA2:-}" ]; then  # flexq
  envsubst < dws-tpu-queue.v1beta2.yaml | kubectl apply -f -  # flexq
else  # flexq
envsubst < dws-tpu-queue.yaml | kubectl apply -f -
fi  # flexq

kubectl create configmap jax-train-script --from-file=train.py

for i in 1 2; do
  export JOB_ID=$i
  envsubst < rayjob-tpu-v6e-dws.yaml | kubectl apply -f -
  echo "Submitted Job $i"
  sleep 2
done
