/* cluster_s3sign.c: the S3 backend's request signing (server/cluster/s3.c, AWS Signature
 * Version 4) against the examples AWS publishes for it ("Signature Calculations for the
 * Authorization Header", examplebucket, 24 May 2013): s3rver, the store tests/api/cluster_s3.t
 * runs, checks the access key but not a V4 signature, so this is what shows the signature is
 * the one a real store computes. */
#define _GNU_SOURCE
#include "cluster/cluster.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define KEY_ID "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define HOST "examplebucket.s3.amazonaws.com"
#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define WHEN 1369353600 /* 20130524T000000Z */

static void example(const char *query, const char *want_sig, const char *what)
{
	char *h = cl_s3_sign(KEY_ID, SECRET, "us-east-1", HOST, "GET", "/", query, EMPTY, WHEN);
	ok(h != NULL, "%s: signed", what);
	char want[600];
	snprintf(want, sizeof want,
		 "x-amz-date: 20130524T000000Z\r\nx-amz-content-sha256: " EMPTY "\r\n"
		 "Authorization: AWS4-HMAC-SHA256 Credential=" KEY_ID "/20130524/us-east-1/s3/aws4_request,"
		 "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=%s\r\n",
		 want_sig);
	is_str(h ? h : "", want, "%s: AWS's signature", what);
	free(h);
}

int main(void)
{
	plan(7);
	example("max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		"GET Bucket (list objects)");
	example("lifecycle=", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
		"GET Bucket Lifecycle");
	/* what else goes into the signature changes it: the region, the time, the secret */
	char *a = cl_s3_sign(KEY_ID, SECRET, "us-east-1", HOST, "GET", "/", "", EMPTY, WHEN);
	char *b = cl_s3_sign(KEY_ID, SECRET, "eu-west-1", HOST, "GET", "/", "", EMPTY, WHEN);
	char *c = cl_s3_sign(KEY_ID, SECRET "x", "us-east-1", HOST, "GET", "/", "", EMPTY, WHEN);
	ok(a && b && strcmp(strstr(a, "Signature="), strstr(b, "Signature=")), "another region, another signature");
	ok(a && c && strcmp(strstr(a, "Signature="), strstr(c, "Signature=")), "another secret, another signature");
	ok(a && !strstr(a, SECRET), "the secret is nowhere in the headers");
	free(a);
	free(b);
	free(c);
	return done();
}
