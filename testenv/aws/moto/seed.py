"""Seed moto with what an EC2NodeClass needs: a VPC, three subnets and a security group
tagged karpenter.sh/discovery=kelp, the node role, the AL2023 SSM parameter (1.34, x86_64)
pointing at one of moto's AMIs, the interruption queue "kelp", and the EKS cluster "kelp" (its service CIDR is what the
EC2NodeClass validation reads: without it, ValidationSucceeded=False
ClusterCIDRResolutionFailed).

usage: seed.py ENDPOINT
Prints what it made as JSON."""
import json
import sys
import urllib.request

import boto3

ep = sys.argv[1]
region = "us-west-2"
tag = [{"Key": "karpenter.sh/discovery", "Value": "kelp"}]
kw = dict(endpoint_url=ep, region_name=region, aws_access_key_id="kelp-seed", aws_secret_access_key="test")
ec2 = boto3.client("ec2", **kw)
ssm = boto3.client("ssm", **kw)
iam = boto3.client("iam", **kw)
eks = boto3.client("eks", **kw)
sqs = boto3.client("sqs", **kw)
out = {}
vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tag}])["Vpc"]["VpcId"]
out["vpc"] = vpc
out["subnets"] = []
for i, az in enumerate(["us-west-2a", "us-west-2b", "us-west-2c"]):
    s = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i * 16}.0/20", AvailabilityZone=az,
                          TagSpecifications=[{"ResourceType": "subnet", "Tags": tag + [{"Key": "Name", "Value": f"kelp-{az}"}]}])["Subnet"]
    out["subnets"].append([s["SubnetId"], az])
out["securityGroup"] = ec2.create_security_group(GroupName="kelp-nodes", Description="kelp nodes", VpcId=vpc,
                                                 TagSpecifications=[{"ResourceType": "security-group", "Tags": tag}])["GroupId"]
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
out["role"] = iam.create_role(RoleName="KarpenterNodeRole-kelp", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
# One of moto's bundled AMIs (amzn-ami-hvm, x86_64). PutParameter refuses /aws/... names, so
# server.py's /_kelp/ssm-put writes the parameter into moto's backend in-process.
ami = "ami-760aaa0f"
name = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"
urllib.request.urlopen(urllib.request.Request(f"{ep}/_kelp/ssm-put?region={region}",
                                              data=json.dumps({name: ami}).encode(), method="POST")).read()
out["ssm"] = {name: ssm.get_parameter(Name=name)["Parameter"]["Value"]}
out["queue"] = sqs.create_queue(QueueName="kelp")["QueueUrl"]
subnets = [s[0] for s in out["subnets"]]
c = eks.create_cluster(name="kelp", version="1.34", roleArn="arn:aws:iam::123456789012:role/kelp-cluster",
                       resourcesVpcConfig={"subnetIds": subnets},
                       kubernetesNetworkConfig={"serviceIpv4Cidr": "10.96.0.0/16"})["cluster"]
out["eks"] = {"name": c["name"], "serviceIpv4Cidr": c["kubernetesNetworkConfig"]["serviceIpv4Cidr"]}
print(json.dumps(out, indent=1))
