"""Deploys template.yaml into moto_server's CloudFormation as `sam deploy` would, and prints what
moto then holds, as JSON, for DeployRehearsalTest to check.

    python3 rehearse.py ENDPOINT TEMPLATE STACK_NAME [Parameter=value ...]

Steps (each what `sam deploy` or CloudFormation does, except where moto needs otherwise):
- a DynamoDB table with a stream is created in moto, and its stream is SourceStreamArn;
- each function's CodeUri (a jar Maven built) becomes an S3 location, as `sam package` makes it;
  the object there is a small zip, not the jar: moto cannot run java21 code (it would need Docker),
  so the code is not what this rehearses;
- each state machine's DefinitionUri is read into Definition: `sam package` would upload the file
  to S3, and moto's Step Functions does not read a DefinitionS3Location;
- AutoPublishAlias is dropped: moto has no AWS::Lambda::Alias, and the stream's event source
  mapping would point at nothing;
- AWS's SAM translator transforms the template, as CloudFormation's AWS::Serverless transform
  does, and the stack is created from the result, uploaded to S3 (it is over CreateStack's
  51,200-byte TemplateBody limit, as `sam deploy` handles it).

Output: {"translated": ..., "conditions": ..., "stack": ..., "resources": [...], "roles": ...,
"functions": ..., "eventSourceMappings": ..., "stateMachines": ..., "queues": ..., "buckets": ...,
"logGroups": ...}; or {"createError": "..."} when CreateStack fails.
"""

import ast
import io
import json
import os
import sys
import time
import zipfile

import boto3
from botocore.exceptions import ClientError
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

CODE_BUCKET = "ddb2iceberg-rehearsal-code"


class NoManagedPolicies:
    """The template names no managed policy in a function's Policies, so SAM needs no list of them."""

    def load(self):
        raise AssertionError("the template names a managed policy: give the rehearsal a list of them")


def clients(endpoint):
    return lambda service: boto3.client(service, endpoint_url=endpoint)


def source_stream(aws, stack_name):
    table = aws("dynamodb").create_table(
        TableName=stack_name + "-source",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return table["TableDescription"]["LatestStreamArn"]


def small_zip():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("README", "The rehearsal's stand-in for a function's jar: moto does not run its code.\n")
    return out.getvalue()


def packaged(template, template_dir, s3):
    """The template as `sam package` leaves it, with the two changes moto needs (see above)."""
    try:
        s3.create_bucket(Bucket=CODE_BUCKET)
    except ClientError as e:
        if e.response["Error"]["Code"] != "BucketAlreadyOwnedByYou":
            raise
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::Function":
            key = props["CodeUri"]
            s3.put_object(Bucket=CODE_BUCKET, Key=key, Body=small_zip())
            props["CodeUri"] = f"s3://{CODE_BUCKET}/{key}"
            props.pop("AutoPublishAlias", None)
        if resource["Type"] == "AWS::Serverless::StateMachine" and "DefinitionUri" in props:
            with open(os.path.join(template_dir, props.pop("DefinitionUri"))) as f:
                props["Definition"] = json.load(f)
    return template


def conditions(template, parameters):
    """The template's conditions for these parameter values (Equals, Not, And, Or, Condition)."""
    values = {name: str(p.get("Default", "")) for name, p in template.get("Parameters", {}).items()}
    values.update(parameters)
    defined = template.get("Conditions", {})

    def value(v):
        if isinstance(v, dict) and "Ref" in v:
            return values[v["Ref"]]
        return str(v)

    def holds(c):
        (fn, args), = c.items()
        if fn == "Condition":
            return holds(defined[args])
        if fn == "Fn::Equals":
            return value(args[0]) == value(args[1])
        if fn == "Fn::Not":
            return not holds(args[0])
        if fn == "Fn::And":
            return all(holds(a) for a in args)
        if fn == "Fn::Or":
            return any(holds(a) for a in args)
        raise ValueError(f"condition function {fn}")

    return {name: holds(c) for name, c in defined.items()}


def policy_document(document):
    # moto keeps an inline policy that CloudFormation created as the Python text of the dict.
    if isinstance(document, str):
        try:
            return json.loads(document)
        except ValueError:
            return ast.literal_eval(document)
    return document


def unless_missing(call, key, **kwargs):
    """A setting moto kept, or None where it kept none (it ignores some properties)."""
    try:
        return call(**kwargs)[key]
    except ClientError as e:
        if e.response["Error"]["Code"].startswith("NoSuch") or "NotFound" in e.response["Error"]["Code"]:
            return None
        raise


def wait_for(cfn, stack_name, deadline_seconds=120):
    deadline = time.monotonic() + deadline_seconds
    while True:
        stack = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        if not stack["StackStatus"].endswith(("IN_PROGRESS", "PENDING")) or time.monotonic() > deadline:
            return stack
        time.sleep(0.2)


def observe(aws, stack_name):
    cfn = aws("cloudformation")
    stack = wait_for(cfn, stack_name)
    resources = cfn.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]
    # moto lists a resource it could not create with no logical id: those are left out here.
    resources = [
        {
            "logicalId": r["LogicalResourceId"],
            "type": r["ResourceType"],
            "physicalId": r["PhysicalResourceId"],
            "status": r["ResourceStatus"],
        }
        for r in resources
        if r.get("LogicalResourceId")
    ]
    seen = {
        "stack": {
            "status": stack["StackStatus"],
            "reason": stack.get("StackStatusReason"),
            "outputs": {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
        },
        "resources": resources,
        "roles": {},
        "functions": {},
        "eventSourceMappings": [],
        "stateMachines": {},
        "queues": {},
        "buckets": {},
        "logGroups": {},
    }
    iam, lam, sfn, sqs, s3, logs = (aws(s) for s in ("iam", "lambda", "stepfunctions", "sqs", "s3", "logs"))
    for r in resources:
        logical, physical = r["logicalId"], r["physicalId"]
        if r["type"] == "AWS::IAM::Role":
            role = iam.get_role(RoleName=physical)["Role"]
            names = iam.list_role_policies(RoleName=physical)["PolicyNames"]
            seen["roles"][logical] = {
                "arn": role["Arn"],
                "assumeRolePolicy": policy_document(role["AssumeRolePolicyDocument"]),
                "policies": {
                    n: policy_document(iam.get_role_policy(RoleName=physical, PolicyName=n)["PolicyDocument"])
                    for n in names
                },
                "managedPolicies": [
                    p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=physical)["AttachedPolicies"]
                ],
            }
        elif r["type"] == "AWS::Lambda::Function":
            config = lam.get_function(FunctionName=physical)["Configuration"]
            concurrency = lam.get_function_concurrency(FunctionName=physical).get("ReservedConcurrentExecutions")
            seen["functions"][logical] = {
                "arn": config["FunctionArn"],
                "role": config["Role"],
                "runtime": config.get("Runtime"),
                "handler": config.get("Handler"),
                "memorySize": config.get("MemorySize"),
                "timeout": config.get("Timeout"),
                "reservedConcurrency": concurrency,
                "environment": config.get("Environment", {}).get("Variables", {}),
            }
            for m in lam.list_event_source_mappings(FunctionName=physical)["EventSourceMappings"]:
                seen["eventSourceMappings"].append(
                    {
                        "function": logical,
                        "functionArn": m["FunctionArn"],
                        "eventSourceArn": m["EventSourceArn"],
                        "startingPosition": m.get("StartingPosition"),
                        "batchSize": m.get("BatchSize"),
                        "onFailure": m.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination"),
                    }
                )
        elif r["type"] == "AWS::StepFunctions::StateMachine":
            machine = sfn.describe_state_machine(stateMachineArn=physical)
            seen["stateMachines"][logical] = {
                "arn": machine["stateMachineArn"],
                "name": machine["name"],
                "roleArn": machine["roleArn"],
                "definition": json.loads(machine["definition"]),
            }
        elif r["type"] == "AWS::SQS::Queue":
            seen["queues"][logical] = sqs.get_queue_attributes(QueueUrl=physical, AttributeNames=["All"])[
                "Attributes"
            ]
        elif r["type"] == "AWS::S3::Bucket":
            s3.head_bucket(Bucket=physical)
            seen["buckets"][logical] = {
                "name": physical,
                "encryption": unless_missing(
                    s3.get_bucket_encryption, "ServerSideEncryptionConfiguration", Bucket=physical
                ),
                "publicAccessBlock": unless_missing(
                    s3.get_public_access_block, "PublicAccessBlockConfiguration", Bucket=physical
                ),
                "lifecycleRules": unless_missing(s3.get_bucket_lifecycle_configuration, "Rules", Bucket=physical),
            }
        elif r["type"] == "AWS::Logs::LogGroup":
            groups = logs.describe_log_groups(logGroupNamePrefix=physical)["logGroups"]
            seen["logGroups"][logical] = [
                {"name": g["logGroupName"], "retentionInDays": g.get("retentionInDays")}
                for g in groups
                if g["logGroupName"] == physical
            ]
    return seen


def main():
    endpoint, template_path, stack_name = sys.argv[1:4]
    parameters = dict(arg.split("=", 1) for arg in sys.argv[4:])
    aws = clients(endpoint)
    parameters.setdefault("SourceStreamArn", source_stream(aws, stack_name))
    with open(template_path) as f:
        template = yaml_parse(f.read())
    template = packaged(template, os.path.dirname(os.path.abspath(template_path)), aws("s3"))
    translated = transform(template, parameters, NoManagedPolicies())

    key = f"{stack_name}/template.json"
    aws("s3").put_object(Bucket=CODE_BUCKET, Key=key, Body=json.dumps(translated).encode())
    try:
        aws("cloudformation").create_stack(
            StackName=stack_name,
            TemplateURL=f"https://{CODE_BUCKET}.s3.amazonaws.com/{key}",
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
    except ClientError as e:
        json.dump({"createError": str(e), "translated": translated}, sys.stdout)
        return
    seen = observe(aws, stack_name)
    seen["parameters"] = parameters
    seen["translated"] = translated
    seen["conditions"] = conditions(translated, parameters)
    json.dump(seen, sys.stdout, default=str)


if __name__ == "__main__":
    main()
