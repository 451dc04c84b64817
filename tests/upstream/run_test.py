#!/usr/bin/env python3
"""Tests of run.py's pure parts (no hcprp process): how an expected-error.txt is read and matched against an ARM
error, how expected documents are compared, which cases are portable, and that EXPECTED_DIFFERENCES names only
cases that exist."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


class Resp:
    def __init__(self, status, body):
        self.status = status
        self.body = body
        self.raw = json.dumps(body)


def arm_error(*problems):
    if len(problems) == 1:
        return {"error": dict(problems[0])}
    return {"error": {"code": "MultipleErrorsOccurred", "message": f"{len(problems)} errors occurred",
                      "details": [dict(p) for p in problems]}}


P1 = {"code": "InvalidRequestContent", "message": "Required value", "target": "properties.version.id"}
P2 = {"code": "InvalidRequestContent", "message": 'Invalid value: "x": bad', "target": "name"}


class ExpectedErrorTest(unittest.TestCase):
    def test_fragments_split_like_upstream_into_problems(self):
        text = ('{\n        "code": "InvalidRequestContent",\n        "message": "Required value",\n'
                '        "target": "properties.version.id"\n      }\n      {\n'
                '        "code": "InvalidRequestContent",\n        "message": "Invalid value: \\"x\\": bad",\n'
                '        "target": "name"\n      }')
        self.assertEqual(run.expected_problems(text), [
            [("code", "InvalidRequestContent", True), ("message", "Required value", True),
             ("target", "properties.version.id", True)],
            [("code", "InvalidRequestContent", True), ("message", 'Invalid value: "x": bad', True),
             ("target", "name", True)]])

    def test_fragments_separated_by_a_comma_are_problems_too(self):
        text = ('      {\n        "code": "InvalidRequestContent",\n        "message": "Required value",\n'
                '        "target": "properties.version.id"\n      },\n      {\n'
                '        "code": "InvalidRequestContent",\n        "message": "Invalid value: \\"x\\": bad",\n'
                '        "target": "name"\n      }')
        self.assertEqual(len(run.expected_problems(text)), 2)
        self.assertEqual(run.compare_error(text, Resp(400, arm_error(P1, P2))), [])

    def test_an_unterminated_message_is_a_prefix(self):
        pairs = run.expected_problems('"code": "InvalidRequestContent",\n    "message": "Duplicate value:')[0]
        self.assertEqual(pairs[1], ("message", "Duplicate value:", False))
        self.assertTrue(run.problem_matches(pairs, {"code": "InvalidRequestContent",
                                                    "message": "Duplicate value: {}"}))
        self.assertFalse(run.problem_matches(pairs, {"code": "InvalidRequestContent", "message": "Duplicate"}))

    def test_text_without_fields_must_occur_in_the_body(self):
        text = "The last node pool can not be deleted from a cluster."
        self.assertEqual(run.expected_problems(text), [text])
        ok = Resp(400, arm_error({"code": "InvalidRequestContent", "message": text, "target": "name"}))
        self.assertEqual(run.compare_error(text, ok), [])
        self.assertNotEqual(run.compare_error(text, Resp(400, arm_error(P1))), [])

    def test_problems_match_the_top_level_error_or_its_details_in_any_order(self):
        text = ('"code": "InvalidRequestContent",\n    "message": "Invalid value: \\"x\\": bad",\n'
                '    "target": "name"')
        self.assertEqual(run.compare_error(text, Resp(400, arm_error(P2))), [])
        self.assertEqual(run.compare_error(text, Resp(400, arm_error(P1, P2))), [])

    def test_a_whole_error_document_names_its_error_and_each_detail(self):
        text = json.dumps(arm_error(P1, P2), indent=2)
        self.assertEqual(len(run.expected_problems(text)), 3)
        self.assertEqual(run.compare_error(text, Resp(400, arm_error(P2, P1))), [])
        self.assertNotEqual(run.compare_error(text, Resp(400, arm_error(P1, P2, dict(P2, target="id")))), [])
        self.assertNotEqual(run.compare_error(text, Resp(400, arm_error(P1))), [])

    def test_a_wrong_message_target_or_status_is_a_difference(self):
        text = ('"code": "InvalidRequestContent",\n    "message": "Required value",\n'
                '    "target": "properties.version.id"')
        other_target = dict(P1, target="properties.version")
        self.assertTrue(run.compare_error(text, Resp(400, arm_error(other_target)))[0].startswith("missing problem"))
        self.assertEqual(run.compare_error(text, Resp(409, arm_error(P1)))[0], "status: expected 400, got 409")
        self.assertEqual(run.compare_error(text, Resp(201, {})), ["status: expected 4xx (400), got 201"])


class DocumentTest(unittest.TestCase):
    def test_only_the_given_fields_are_compared(self):
        self.assertEqual(run.compare_document({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3}), [])
        self.assertEqual(run.compare_document({"a": {"b": 1}}, {"a": {"b": 2}}), ["a.b: expected 1, got 2"])
        self.assertEqual(run.compare_document({"a": {"b": 1}}, {"a": {}}), ["a.b: expected 1, missing"])

    def test_arrays_are_compared_whole(self):
        self.assertEqual(run.compare_document({"a": [1, 2]}, {"a": [1, 2]}), [])
        self.assertEqual(run.compare_document({"a": [1, 2]}, {"a": [1, 2, 3]}), ["a: expected [1, 2], got [1, 2, 3]"])

    def test_run_dependent_fields_are_ignored(self):
        expected = {"systemData": {"createdAt": "t1", "createdBy": "x"},
                    "properties": {"provisioningState": "Accepted"}}
        actual = {"systemData": {"createdAt": "t2", "createdBy": "x"},
                  "properties": {"provisioningState": "Succeeded"}}
        self.assertEqual(run.compare_document(expected, actual), [])
        failed = {"properties": {"provisioningState": "Failed"}}
        self.assertEqual(run.compare_document({"properties": {"provisioningState": "Succeeded"}}, failed),
                         ['properties.provisioningState: expected "Succeeded", got "Failed"'])

    def test_operation_ids_and_times_are_ignored(self):
        expected = {"id": "a", "name": "b", "startTime": "t", "status": "Succeeded"}
        self.assertEqual(run.compare_operation_status(expected, {"id": "z", "status": "Succeeded"}), [])
        self.assertNotEqual(run.compare_operation_status(expected, {"status": "Failed"}), [])

    def test_a_list_matches_items_by_name(self):
        expected = [{"name": "a", "v": 1}, {"name": "b", "v": 2}]
        self.assertEqual(run.compare_list(expected, [{"name": "b", "v": 2}, {"name": "a", "v": 1}]), [])
        self.assertEqual(run.compare_list(expected, [{"name": "a", "v": 1}]),
                         ["expected 2 items, got 1: ['a']"])


class DataTest(unittest.TestCase):
    def test_every_listed_difference_names_a_portable_case(self):
        portable = {c.name for c in run.discover() if not c.not_portable}
        self.assertEqual(sorted(set(run.EXPECTED_DIFFERENCES) - portable), [])

    def test_reasons_say_which_kind(self):
        for name, reason in run.EXPECTED_DIFFERENCES.items():
            self.assertTrue(reason.startswith(("seed decides otherwise: ", "not yet fixed: ",
                                               "cannot be replayed as it is: ")), name)

    def test_cases_reading_preloaded_documents_are_not_portable(self):
        cases = {c.name: c for c in run.discover()}
        self.assertIn("pre-loads database documents", cases["Cluster/read-old-data"].not_portable)
        self.assertIn("no HTTP step", cases["Migration/migrate-old-data"].not_portable)
        # Loading only what a backend reports (active versions) keeps a case portable.
        self.assertIsNone(cases["NodePool/version-update"].not_portable)

    def test_upstream_location_is_read_as_the_one_served(self):
        self.assertEqual(run.localise(b'{"location": "fake-location"}'), b'{"location": "eastus"}')


if __name__ == "__main__":
    unittest.main()
